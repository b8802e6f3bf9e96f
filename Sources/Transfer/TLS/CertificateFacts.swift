import Foundation
import NIOSSL

#if canImport(Glibc)
import Glibc
#endif

/// What a server's certificate says about itself, taken from the chain it presented: when it is valid,
/// which names it is for, who issued it. Used only to explain a certificate that did not verify.
public struct CertificateFacts: Sendable, Equatable {
    public var notBefore: Int64
    public var notAfter: Int64
    /// DNS names and IP addresses of the subject alternative names, as text.
    public var names: [String]
    public var subject: String?
    public var issuer: String?

    public init(notBefore: Int64, notAfter: Int64, names: [String], subject: String?, issuer: String?) {
        self.notBefore = notBefore
        self.notAfter = notAfter
        self.names = names
        self.subject = subject
        self.issuer = issuer
    }

    /// The facts of a leaf certificate.
    init(_ certificate: NIOSSLCertificate) {
        var names: [String] = []
        for name in certificate._subjectAlternativeNames() {
            if name.nameType == .dnsName {
                names.append(String(decoding: name.contents, as: UTF8.self))
            } else if name.nameType == .ipAddress, let address = Self.addressText(Array(name.contents)) {
                names.append(address)
            }
        }
        let cn = { (list: [SSLCertificateName]) in list.first { $0.type == .commonName }?.value }
        self.init(
            notBefore: Int64(certificate.notValidBefore), notAfter: Int64(certificate.notValidAfter), names: names,
            subject: cn(certificate.subjectName), issuer: cn(certificate.issuerName))
    }

    /// Why this certificate does not verify for `host` at `now`, most specific first; nil when it looks
    /// right (so its issuer is what is not trusted).
    public func problem(host: String, now: Int64) -> Problem? {
        if now > notAfter { return .expired }
        if now < notBefore { return .notYetValid }
        if !matches(host: host) { return .otherHost }
        return nil
    }

    /// What is wrong with a certificate that is not its issuer.
    public enum Problem: Sendable, Equatable {
        case expired, notYetValid, otherHost
    }

    /// Whether the certificate names `host`: an exact DNS name or address, or a `*.` wildcard for one label.
    /// (Without subject alternative names the common name is used, as old certificates do.)
    public func matches(host: String) -> Bool {
        let target = host.lowercased().trimmingTrailingDot
        let candidates = names.isEmpty ? subject.map { [$0] } ?? [] : names
        let targetAddress = NoProxy.address(target)
        for name in candidates {
            let n = name.lowercased().trimmingTrailingDot
            if let targetAddress {
                if NoProxy.address(n) == targetAddress { return true }
                continue
            }
            if n == target { return true }
            if n.hasPrefix("*."), let dot = target.firstIndex(of: "."), target[dot...] == n.dropFirst(),
                target[..<dot].count > 0
            {
                return true
            }
        }
        return false
    }

    /// 4 or 16 address bytes as text (`127.0.0.1`, `::1`).
    static func addressText(_ bytes: [UInt8]) -> String? {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        var text = [CChar](repeating: 0, count: 64)
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        guard inet_ntop(family, bytes, &text, socklen_t(text.count)) != nil else { return nil }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A date as `2020-02-01 00:00 UTC`.
    static func show(_ seconds: Int64) -> String {
        var t = time_t(seconds)
        var parts = tm()
        gmtime_r(&t, &parts)
        return String(
            format: "%04d-%02d-%02d %02d:%02d UTC", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
            Int(parts.tm_mday),
            Int(parts.tm_hour), Int(parts.tm_min))
    }
}

extension String {
    var trimmingTrailingDot: String {
        var s = self
        while s.hasSuffix(".") { s.removeLast() }
        return s
    }
}
