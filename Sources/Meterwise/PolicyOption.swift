import ArgumentParser
import Policy

/// How commands name and load the policy: one help text, one resolver (`PolicyLocator`), one error.
enum PolicyOption {
    static let help = """
        Policy file or drop-in directory. Default: $XDG_CONFIG_HOME/meterwise/policies.d (users) or \
        /etc/meterwise/policies.d when present, else the built-in policies/default.yaml.
        """

    /// Loads the policy `source` names. A bad policy prints every problem (`file:line:column` and the fix)
    /// and exits 78 (EX_CONFIG): the command line was right, the file is not, so no usage text follows.
    static func load(_ source: PolicySource) throws -> PolicySet {
        do {
            return try source.load()
        } catch {
            Output.error("Error: policy \(source): \(error)")
            throw ExitCode(78)
        }
    }
}
