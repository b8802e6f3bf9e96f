/// Every error of the Lab module (network namespaces, tc, routes). The message says what to fix.
public struct LabError: Error, Sendable, CustomStringConvertible {
    public enum Code: Sendable, Hashable {
        case notSupported
        case commandFailed
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
