import Links
import Logging
import Synchronization

/// A source's hints with its links' captive portal APIs asked (RFC 8908): wherever a hint names an API
/// (`LinkHint.portalAPI`, from a DHCP lease's option 114), the API's answer joins that link's hint as
/// connectivity `portal` (with the `user-portal-url` to sign in at) or `full`, source `rfc8908`.
///
/// Asked when a lease first names the API; asked again only while the answer can change by itself: while
/// captive (the user signs in), when the session's `seconds-remaining` ends, and after a failure, each on
/// `PortalAPISchedule`'s back-off. A link whose lease names no API costs nothing.
public struct PortalAPIHints: LinkHintSource {
    /// Asks the API at a URL; `PortalAPIQuery.live` is the real one.
    public typealias Query = @Sendable (_ url: String) async -> Result<PortalAPIAnswer, PortalAPIProblem>

    let base: any LinkHintSource
    let query: Query
    let schedule: PortalAPISchedule
    let logger: Logger

    public init(
        base: any LinkHintSource, query: @escaping Query, schedule: PortalAPISchedule = PortalAPISchedule(),
        logger: Logger = Logger(label: "meterwise.hints")
    ) {
        self.base = base
        self.query = query
        self.schedule = schedule
        self.logger = logger
    }

    public func hints() -> AsyncStream<LinkHints> {
        let (stream, continuation) = AsyncStream.makeStream(of: LinkHints.self, bufferingPolicy: .bufferingNewest(1))
        let task = Task { [self] in
            await run(continuation)
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// The base's hints go out at once; one asker per API URL runs beside them, for as long as some link's
    /// hint names that URL. The askers are cancelled when their URL goes and when the stream ends.
    private func run(_ out: AsyncStream<LinkHints>.Continuation) async {
        let joined = PortalAnswers()
        var askers: [String: Task<Void, Never>] = [:]
        var started = false
        defer { for asker in askers.values { asker.cancel() } }
        for await hints in base.hints() {
            let urls = Set(hints.byName.values.compactMap(\.portalAPI))
            for (url, asker) in askers where !urls.contains(url) {
                asker.cancel()
                askers[url] = nil
            }
            joined.setBase(hints, keeping: urls)
            let first = askers.isEmpty && !urls.isEmpty && !started
            if !first { out.yield(joined.current) }
            for url in urls where askers[url] == nil {
                askers[url] = Task { [self] in await ask(url, joined: joined, out: out) }
            }
            if first {
                // The first hints wait up to `firstAnswerWait` for the APIs' first answers, so a one-shot
                // reader (`meterwise links`) and the daemon's first snapshot see them.
                let deadline = ContinuousClock.now + schedule.firstAnswerWait
                while !joined.answered(urls), ContinuousClock.now < deadline {
                    try? await Task.sleep(for: .milliseconds(10))
                }
                out.yield(joined.current)
            }
            started = true
        }
    }

    /// Asks `url` until the schedule says nothing will change by itself, or the task is cancelled.
    private func ask(_ url: String, joined: PortalAnswers, out: AsyncStream<LinkHints>.Continuation) async {
        var previous: Result<PortalAPIAnswer, PortalAPIProblem>?
        var repeats = 0
        while !Task.isCancelled {
            // The query runs to its end (bounded by its own timeouts) even when this asker is cancelled: a
            // query cut short could leave its client and TLS context behind, and a lease that changes
            // again and again would pile them up.
            let query = self.query
            let result = await Task.detached { await query(url) }.value
            guard !Task.isCancelled else { return }
            if result != previous { log(url, result) }
            repeats = PortalAPISchedule.sameKind(result, previous) ? repeats + 1 : 0
            previous = result
            if joined.set(url, (try? result.get())) { out.yield(joined.current) }
            guard let delay = schedule.next(after: result, repeats: repeats) else { return }
            try? await Task.sleep(for: delay)
        }
    }

    private func log(_ url: String, _ result: Result<PortalAPIAnswer, PortalAPIProblem>) {
        switch result {
        case .success(let answer) where answer.captive:
            logger.info("captive portal API \(url): captive, sign in at \(answer.userPortalURL ?? "(no page named)")")
        case .success(let answer):
            let left = answer.secondsRemaining.map { ", \($0) s of the session left" } ?? ""
            logger.info("captive portal API \(url): not captive\(left)")
        case .failure(let problem):
            logger.info("captive portal API \(url) not used: \(problem); asked again later")
        }
    }
}

/// The base source's last hints and each API's last answer, joined (`current`). Shared by the askers.
final class PortalAnswers: Sendable {
    private struct State {
        var base = LinkHints.none
        var answers: [String: PortalAPIAnswer] = [:]
        /// The URLs asked at least once (answered or failed).
        var asked: Set<String> = []
    }

    private let state = Mutex(State())

    func setBase(_ hints: LinkHints, keeping urls: Set<String>) {
        state.withLock { state in
            state.base = hints
            state.answers = state.answers.filter { urls.contains($0.key) }
            state.asked.formIntersection(urls)
        }
    }

    /// Records `url`'s answer (nil: none usable); true when that changes what `current` gives.
    func set(_ url: String, _ answer: PortalAPIAnswer?) -> Bool {
        state.withLock { state in
            state.asked.insert(url)
            guard state.answers[url] != answer else { return false }
            state.answers[url] = answer
            return true
        }
    }

    /// Whether every one of `urls` was asked at least once.
    func answered(_ urls: Set<String>) -> Bool {
        state.withLock { urls.isSubset(of: $0.asked) }
    }

    /// The base's hints, each link that names an answered API given that answer's connectivity and sign-in
    /// page; `rfc8908` among the sources while any API answers.
    var current: LinkHints {
        state.withLock { state in
            var hints = state.base
            for (name, hint) in hints.byName {
                guard let url = hint.portalAPI, let answer = state.answers[url] else { continue }
                hints.byName[name] = hint.filling(from: answer.hint)
            }
            if !state.answers.isEmpty { hints.sources.append("rfc8908") }
            return hints
        }
    }
}

/// When a portal API is asked again (RFC 8908 leaves it to the client). Pure.
public struct PortalAPISchedule: Sendable {
    /// While captive: the first wait, doubled each time the answer stays captive, up to `captiveMax`.
    public var captive: Duration = .seconds(5)
    public var captiveMax: Duration = .seconds(60)
    /// After a failure (unreachable, a bad answer): the same, from `failure` up to `failureMax`.
    public var failure: Duration = .seconds(30)
    public var failureMax: Duration = .seconds(600)
    /// A session's end (`seconds-remaining`) is asked about no sooner than this after the answer.
    public var shortest: Duration = .seconds(5)
    /// How long the source's first hints wait for the first answers of the APIs they name.
    public var firstAnswerWait: Duration = .seconds(1)

    public init() {}

    /// The wait before asking again after `result`, the `repeats`-th same kind of result in a row (0 for
    /// the first); nil when nothing will change by itself (not captive, no session end named).
    public func next(after result: Result<PortalAPIAnswer, PortalAPIProblem>, repeats: Int) -> Duration? {
        let doubling = min(max(0, repeats), 16)
        switch result {
        case .success(let answer) where answer.captive:
            return min(captive * (1 << doubling), captiveMax)
        case .success(let answer):
            guard let seconds = answer.secondsRemaining else { return nil }
            return max(shortest, .seconds(min(seconds, 86_400) + 1))
        case .failure:
            return min(failure * (1 << doubling), failureMax)
        }
    }

    /// Whether two results are of one kind (both captive, both not, both failures), for the back-off.
    static func sameKind(
        _ a: Result<PortalAPIAnswer, PortalAPIProblem>, _ b: Result<PortalAPIAnswer, PortalAPIProblem>?
    ) -> Bool {
        switch (a, b) {
        case (.success(let x), .success(let y)?): x.captive == y.captive
        case (.failure, .failure?): true
        default: false
        }
    }
}
