/// Every error of the Lab module (network namespaces, tc, routes, the lab's child processes).
/// The message says what to fix.
public struct LabError: Error, Sendable, CustomStringConvertible {
    public enum Code: Sendable, Hashable {
        case notSupported
        case commandFailed
        /// The scenario cannot be built as a topology (unknown or too many links).
        case scenarioUnsupported
        /// A child process (the server or the engine) failed or said something unexpected.
        case childFailed
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
