/// A shell-style glob (`*`, `?`, `[abc]`, `[a-z]`, `[!x]`, `\*`), compiled once and matched many times.
/// Used for link names, SSIDs, drivers and MAC addresses in policy files.
public struct Glob: Sendable, Hashable, CustomStringConvertible {
    enum Token: Sendable, Hashable {
        case literal(Unicode.Scalar)
        case any  // ?
        case star  // *
        case set(negated: Bool, items: [ClosedRange<Unicode.Scalar>])
    }

    /// The text as written in the policy file.
    public let pattern: String
    let tokens: [Token]

    /// The hint shown when a glob does not compile.
    public static let hint =
        "globs use * (any text), ? (one character) and [abc] / [a-z] / [!x]; write \\* for a literal *"

    /// Compiles a pattern; nil with a message when it is malformed (an unterminated `[`, an empty set, a
    /// trailing `\`).
    public static func compile(_ pattern: String) -> Result<Glob, GlobSyntaxError> {
        var tokens: [Token] = []
        let scalars = Array(pattern.unicodeScalars)
        var i = 0
        while i < scalars.count {
            let c = scalars[i]
            switch c {
            case "*":
                if tokens.last != .star { tokens.append(.star) }
                i += 1
            case "?":
                tokens.append(.any)
                i += 1
            case "\\":
                guard i + 1 < scalars.count else {
                    return .failure(GlobSyntaxError(message: "the glob `\(pattern)` ends with a lone \\"))
                }
                tokens.append(.literal(scalars[i + 1]))
                i += 2
            case "[":
                var j = i + 1
                var negated = false
                if j < scalars.count, scalars[j] == "!" || scalars[j] == "^" {
                    negated = true
                    j += 1
                }
                var items: [ClosedRange<Unicode.Scalar>] = []
                var closed = false
                var first = true
                while j < scalars.count {
                    let s = scalars[j]
                    if s == "]" && !first {
                        closed = true
                        break
                    }
                    first = false
                    if j + 2 < scalars.count, scalars[j + 1] == "-", scalars[j + 2] != "]" {
                        let hi = scalars[j + 2]
                        guard s <= hi else {
                            return .failure(
                                GlobSyntaxError(message: "the range `\(s)-\(hi)` in glob `\(pattern)` is backwards"))
                        }
                        items.append(s...hi)
                        j += 3
                    } else {
                        items.append(s...s)
                        j += 1
                    }
                }
                guard closed else {
                    return .failure(GlobSyntaxError(message: "the glob `\(pattern)` has a `[` without a closing `]`"))
                }
                tokens.append(.set(negated: negated, items: items))
                i = j + 1
            default:
                tokens.append(.literal(c))
                i += 1
            }
        }
        return .success(Glob(pattern: pattern, tokens: tokens))
    }

    init(pattern: String, tokens: [Token]) {
        self.pattern = pattern
        self.tokens = tokens
    }

    /// A glob that must compile (for tests and built-ins); traps on a malformed pattern.
    public init(_ pattern: String) {
        switch Self.compile(pattern) {
        case .success(let glob): self = glob
        case .failure(let error): preconditionFailure(error.message)
        }
    }

    public var description: String { pattern }

    /// Whether the whole of `text` matches. Iterative with single backtracking point per star, so it is
    /// linear-ish and never recurses.
    public func matches(_ text: String) -> Bool {
        let s = Array(text.unicodeScalars)
        var t = 0
        var p = 0
        var starP = -1
        var starT = 0
        while t < s.count {
            if p < tokens.count {
                switch tokens[p] {
                case .star:
                    starP = p
                    starT = t
                    p += 1
                    continue
                case .any:
                    p += 1
                    t += 1
                    continue
                case .literal(let c) where c == s[t]:
                    p += 1
                    t += 1
                    continue
                case .set(let negated, let items) where items.contains { $0.contains(s[t]) } != negated:
                    p += 1
                    t += 1
                    continue
                default: break
                }
            }
            guard starP >= 0 else { return false }
            p = starP + 1
            starT += 1
            t = starT
        }
        while p < tokens.count, tokens[p] == .star { p += 1 }
        return p == tokens.count
    }
}

/// Why a glob did not compile.
public struct GlobSyntaxError: Error, Sendable, Hashable {
    public var message: String
}
