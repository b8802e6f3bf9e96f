import Testing

@testable import Policy

@Suite struct DropInTests {
    let base = """
        version: 1
        defaults: { resume_after: 5s, action: pause }
        networks:
          - name: hotspot
            match: { ssid: "AndroidAP*" }
            set: { metered: yes }
        rules:
          - name: run-unmetered
            when: { metered: no }
            action: run
          - name: pause-metered
            when: { metered: yes }
            action: pause
        """

    @Test func laterFilesAppendReplaceInsertAndRemove() throws {
        let dropIn = """
            version: 1
            defaults: { resume_after: 20s }
            rules:
              - name: urgent
                before: pause-metered
                when: { metered: yes, tags: [urgent] }
                action: run
              - name: run-unmetered
                when: { metered: no }
                throttle: 5MiB/s
              - name: catch-all
                action: pause
            networks:
              - name: hotspot
                enabled: no
            """
        let policy = try PolicySet.parse(files: [("00-base.yaml", base), ("50-local.yaml", dropIn)])
        #expect(policy.rules.map(\.name) == ["run-unmetered", "urgent", "pause-metered", "catch-all"])
        #expect(policy.rules[0].action == .throttle)
        #expect(policy.resumeAfter == .seconds(20))
        #expect(policy.defaults.action == .pause)  // not overridden by the drop-in
        #expect(policy.networks.isEmpty)
        #expect(policy.files == ["00-base.yaml", "50-local.yaml"])
    }

    @Test func directivesThatNameNothingAreLocatedErrors() {
        let dropIn =
            "version: 1\nrules:\n  - name: x\n    before: nope\n    action: run\n  - name: y\n    enabled: no\n"
        do {
            _ = try PolicySet.parse(files: [("00-base.yaml", base), ("50-local.yaml", dropIn)])
            Issue.record("expected errors")
        } catch {
            #expect(
                error.issues.map { "\($0.file):\($0.line):\($0.column)" } == ["50-local.yaml:3:5", "50-local.yaml:6:5"])
        }
    }

    @Test func sharedBudgetsMustAgree() {
        let text = """
            version: 1
            rules:
              - name: a
                action: run
                budget: { name: cell, bytes: 1GiB, period: monthly }
              - name: b
                action: run
                budget: { name: cell, bytes: 2GiB, period: monthly }
            """
        #expect(Fixtures.issues(text).first?.message.contains("declared differently") == true)
    }

    @Test func loadsADirectoryInLexicalOrder() throws {
        let dir = "/tmp/meterwise-policy-test-\(getpid())"
        mkdir(dir, 0o755)
        defer {
            for f in ["10-base.yaml", "20-more.yml", "README"] { unlink(dir + "/" + f) }
            rmdir(dir)
        }
        write(dir + "/20-more.yml", "version: 1\nrules:\n  - name: second\n    action: pause\n")
        write(dir + "/10-base.yaml", "version: 1\nrules:\n  - name: first\n    action: run\n")
        write(dir + "/README", "not yaml")
        let policy = try PolicySet.load(path: dir)
        #expect(policy.rules.map(\.name) == ["first", "second"])
        #expect(throws: PolicyError.self) { try PolicySet.load(path: dir + "/missing") }
    }

    func write(_ path: String, _ text: String) {
        let f = fopen(path, "w")
        fputs(text, f)
        fclose(f)
    }
}

#if canImport(Glibc)
import Glibc
#endif
