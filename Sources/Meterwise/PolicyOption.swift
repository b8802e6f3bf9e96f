import ArgumentParser
import Policy

/// How commands name and load the policy: one help text, one resolver (`PolicyLocator`), one error.
enum PolicyOption {
    static let help = """
        Policy file or drop-in directory. Default: $XDG_CONFIG_HOME/meterwise/policies.d (users) or \
        /etc/meterwise/policies.d when present, else the built-in policies/default.yaml.
        """

    /// Loads the policy `source` names; a bad policy is a usage error that lists every problem.
    static func load(_ source: PolicySource) throws -> PolicySet {
        do {
            return try source.load()
        } catch {
            throw ValidationError("policy \(source): \(error)")
        }
    }
}
