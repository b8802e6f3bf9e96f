/// A numeric test written as `< 20MiB`, `>= 5`, `= 3` or a range `1MiB..20MiB` (start included, end
/// excluded). Used for job size, priority and budget left.
public struct Comparison: Sendable, Hashable, CustomStringConvertible {
    public enum Operator: String, Sendable, Hashable {
        case less = "<"
        case lessOrEqual = "<="
        case greater = ">"
        case greaterOrEqual = ">="
        case equal = "="
    }

    /// Lower bound (included), upper bound (excluded); either may be open.
    public var low: Int64?
    public var high: Int64?
    public var description: String

    public init(low: Int64?, high: Int64?, description: String) {
        self.low = low
        self.high = high
        self.description = description
    }

    public func matches(_ value: Int64) -> Bool {
        if let low, value < low { return false }
        if let high, value >= high { return false }
        return true
    }

    /// Parses the text with `value` turning a number with its unit into an Int64.
    public static func parse(_ text: String, value: (String) -> Int64?) -> Comparison? {
        let t = text.strippingSpaces()
        if let range = t.range(of: "..") {
            let a = String(t[..<range.lowerBound]).strippingSpaces()
            let b = String(t[range.upperBound...]).strippingSpaces()
            guard let low = value(a), let high = value(b), low < high else { return nil }
            return Comparison(low: low, high: high, description: "\(a)..\(b)")
        }
        for op in [Operator.lessOrEqual, .greaterOrEqual, .less, .greater, .equal] where t.hasPrefix(op.rawValue) {
            let rest = String(t.dropFirst(op.rawValue.count)).strippingSpaces()
            guard let v = value(rest) else { return nil }
            let description = "\(op.rawValue) \(rest)"
            switch op {
            case .less: return Comparison(low: nil, high: v, description: description)
            case .lessOrEqual: return v == .max ? nil : Comparison(low: nil, high: v + 1, description: description)
            case .greater: return v == .max ? nil : Comparison(low: v + 1, high: nil, description: description)
            case .greaterOrEqual: return Comparison(low: v, high: nil, description: description)
            case .equal: return v == .max ? nil : Comparison(low: v, high: v + 1, description: description)
            }
        }
        guard let v = value(t), v != .max else { return nil }
        return Comparison(low: v, high: v + 1, description: "= \(t)")
    }
}

extension String {
    func strippingSpaces() -> String {
        let character: Character = " "
        var s = Substring(self)
        while s.first == character { s = s.dropFirst() }
        while s.last == character { s = s.dropLast() }
        return String(s)
    }
}
