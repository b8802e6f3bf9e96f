/// The policy Meterwise uses when no policy file is installed: `policies/default.yaml`, built in so an
/// installed binary needs no file. `BuiltInCopiesTests` (Tests/PolicyTests/ShippedPoliciesTests.swift) fails
/// the moment the two differ.
public enum ShippedPolicy {
    /// What `PolicyLocator` calls this policy when it is the one in use.
    public static let name = "built-in default (policies/default.yaml)"

    /// The text of `policies/default.yaml`, byte for byte.
    public static let defaultYAML = """
        # Meterwise default policy: download on unmetered links, wait on metered ones.
        #
        # "Metered" comes from NetworkManager-style guesses (wwan, bluetooth, ppp and usb-tether links are
        # metered, everything else is not; a metered hint from NetworkManager or DHCP wins when present), plus
        # any `networks:` rules. See docs/policy.md for every key.
        version: 1

        defaults:
          # Hysteresis: after a pause, a job resumes only once the answer has been `run` for this long, so a
          # flapping Wi-Fi does not restart downloads every second. Pausing is always immediate.
          resume_after: 5s
          # When no rule matches. The default never uses a metered link either way.
          action: pause

        rules:
          # Rules are tried top to bottom; the first that matches decides.
          - name: run-unmetered
            when: { metered: no }
            action: run
            # Only unmetered uplinks carry the bytes, even when a metered one is also up.
            via: unmetered

          - name: pause-metered
            when: { metered: yes }
            action: pause
        """ + "\n"

    /// The built-in default, parsed.
    public static func defaultPolicy() -> PolicySet {
        do {
            return try PolicySet.parse(files: [(name: name, text: defaultYAML)])
        } catch {
            preconditionFailure("the built-in default policy does not parse: \(error)")
        }
    }
}
