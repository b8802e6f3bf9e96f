import Foundation
import Links

/// What a captive portal's API (RFC 8908) says of the client: captive or not, where to sign in, how long
/// the session lasts. Pure: `parse` checks the answer's type, size and every field before anything is used.
public struct PortalAPIAnswer: Sendable, Hashable {
    /// `captive`: true while the user still has to sign in (or the session is over).
    public var captive: Bool
    /// `user-portal-url`: the page to sign in at (http or https, printable, at most 2048 bytes).
    public var userPortalURL: String?
    /// `venue-info-url`: the venue's own page.
    public var venueInfoURL: String?
    /// `seconds-remaining`: how long the session lasts, whole seconds, 0 through 10^9.
    public var secondsRemaining: Int64?
    /// `bytes-remaining`: how many bytes the session may still carry, 0 through 2^53.
    public var bytesRemaining: Int64?

    public init(
        captive: Bool, userPortalURL: String? = nil, venueInfoURL: String? = nil, secondsRemaining: Int64? = nil,
        bytesRemaining: Int64? = nil
    ) {
        self.captive = captive
        self.userPortalURL = userPortalURL
        self.venueInfoURL = venueInfoURL
        self.secondsRemaining = secondsRemaining
        self.bytesRemaining = bytesRemaining
    }

    /// The most an answer may weigh; RFC 8908's JSON is a few hundred bytes.
    public static let maxBytes = 64 << 10

    /// The answer in `body`, served as `contentType`; an error naming what is wrong otherwise: a type that
    /// is not JSON (a portal's HTML page), more than 64 KiB, JSON that is not an object, `captive` missing or
    /// not a boolean. A URL that is not http(s) or a number out of range is dropped, not trusted.
    public static func parse(_ body: [UInt8], contentType: String?) -> Result<PortalAPIAnswer, PortalAPIProblem> {
        let type = (contentType ?? "").split(separator: ";").first.map {
            $0.trimmingCharacters(in: .whitespaces).lowercased()
        }
        guard type == "application/captive+json" || type == "application/json" else {
            return .failure(
                .init(
                    "answered \(contentType.map { "'\($0.prefix(80))'" } ?? "no Content-Type"), not application/captive+json"
                ))
        }
        guard body.count <= maxBytes else { return .failure(.init("answered more than 64 KiB")) }
        let fields: Fields
        do {
            fields = try JSONDecoder().decode(Fields.self, from: Data(body))
        } catch DecodingError.typeMismatch(_, let context) where context.codingPath.isEmpty {
            return .failure(.init("answered something that is not a JSON object"))
        } catch DecodingError.keyNotFound, DecodingError.typeMismatch, DecodingError.valueNotFound {
            return .failure(.init("answered without a boolean 'captive'"))
        } catch {
            return .failure(.init("answered something that is not a JSON object"))
        }
        var answer = PortalAPIAnswer(captive: fields.captive)
        answer.userPortalURL = fields.userPortalURL.flatMap(webURL)
        answer.venueInfoURL = fields.venueInfoURL.flatMap(webURL)
        answer.secondsRemaining = fields.secondsRemaining.flatMap { count($0, max: 1_000_000_000) }
        answer.bytesRemaining = fields.bytesRemaining.flatMap { count($0, max: 1 << 53) }
        return .success(answer)
    }

    /// The JSON as RFC 8908 names it: `captive` must be a boolean; any other field of the wrong type is
    /// dropped.
    struct Fields: Decodable {
        var captive: Bool
        var userPortalURL: String?
        var venueInfoURL: String?
        var secondsRemaining: Double?
        var bytesRemaining: Double?

        enum CodingKeys: String, CodingKey {
            case captive, userPortalURL = "user-portal-url", venueInfoURL = "venue-info-url"
            case secondsRemaining = "seconds-remaining", bytesRemaining = "bytes-remaining"
        }

        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            captive = try c.decode(Bool.self, forKey: .captive)
            userPortalURL = try? c.decodeIfPresent(String.self, forKey: .userPortalURL)
            venueInfoURL = try? c.decodeIfPresent(String.self, forKey: .venueInfoURL)
            secondsRemaining = try? c.decodeIfPresent(Double.self, forKey: .secondsRemaining)
            bytesRemaining = try? c.decodeIfPresent(Double.self, forKey: .bytesRemaining)
        }
    }

    /// A non-negative finite number up to `max`, in whole units (a fraction is rounded down); nil otherwise.
    static func count(_ value: Double, max: Int64) -> Int64? {
        guard value.isFinite, value >= 0, value <= Double(max) else { return nil }
        return Int64(value)
    }

    /// `text` when it is an http or https URL fit to show: printable ASCII, at most 2048 bytes.
    static func webURL(_ text: String) -> String? {
        guard isPrintableURL(text), text.hasPrefix("https://") || text.hasPrefix("http://") else { return nil }
        return text
    }

    /// Printable ASCII with no space, 1 through 2048 bytes: a URL that can be shown and logged as it is.
    public static func isPrintableURL(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 2048 && text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
    }

    /// `text` when it can be asked as a portal API: an https URL fit to show, with a host, no credentials
    /// (they would be logged), and a port from 1 to 65535 when one is given; nil otherwise. What comes from a
    /// DHCP server is checked here before any client sees it.
    public static func apiURL(_ text: String) -> String? {
        guard isPrintableURL(text), text.hasPrefix("https://") else { return nil }
        let authority = text.dropFirst("https://".count).prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard !authority.isEmpty, !authority.contains("@") else { return nil }
        var port: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]"), close > authority.index(after: authority.startIndex)
            else { return nil }
            let rest = authority[authority.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { return nil }
                port = rest.dropFirst()
            }
        } else if let colon = authority.firstIndex(of: ":") {
            guard colon > authority.startIndex else { return nil }
            port = authority[authority.index(after: colon)...]
        }
        if let port {
            guard (1...5).contains(port.count), port.allSatisfy({ $0.isASCII && $0.isNumber }), let number = Int(port),
                (1...65535).contains(number)
            else { return nil }
        }
        return text
    }

    /// The link hint this answer gives: `portal` with the sign-in page while captive, `full` once not.
    public var hint: LinkHint {
        var hint = LinkHint()
        hint.connectivity = captive ? .portal : .full
        hint.connectivitySource = "rfc8908"
        hint.portalURL = captive ? userPortalURL : nil
        return hint
    }
}

/// Why a portal API's answer was not used, for the log.
public struct PortalAPIProblem: Error, Sendable, Hashable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
