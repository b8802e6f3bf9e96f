import ArgumentParser
import Foundation
import Transfer

/// How `get` reaches a server: whom it trusts over https, the client certificate it shows, and the proxy.
struct ConnectionOptions: ParsableArguments {
    @Option(
        name: .customLong("cacert"),
        help: ArgumentHelp(
            "Trust only the CA certificates in this PEM file for https (instead of the system's store).",
            valueName: "file"))
    var caFile: String?

    @Option(
        name: .customLong("capath"),
        help: ArgumentHelp(
            "Trust only the CA certificates in the PEM files of this directory (with --cacert: both).", valueName: "dir"
        ))
    var caPath: String?

    @Option(
        name: .customLong("cert"),
        help: ArgumentHelp("A client certificate (PEM) for servers that require one (mTLS).", valueName: "file"))
    var certFile: String?

    @Option(
        name: .customLong("key"),
        help: ArgumentHelp("The client certificate's private key (PEM, unencrypted).", valueName: "file"))
    var keyFile: String?

    @Option(
        name: .customLong("proxy"),
        help: ArgumentHelp(
            "Use this proxy: http://[USER:PASSWORD@]HOST[:PORT] or socks5://HOST[:PORT] (replaces https_proxy, http_proxy and all_proxy; no_proxy still applies; \"\" for none).",
            valueName: "url"))
    var proxy: String?

    @Flag(name: .customLong("no-proxy"), help: "Connect directly, whatever https_proxy, http_proxy and all_proxy say.")
    var noProxy = false

    @Flag(
        name: .customLong("http2"),
        help:
            "Speak HTTP/2 where an https server offers it: segments as streams of one connection (off by default: connections are faster; docs/get.md)."
    )
    var http2 = false

    func validate() throws {
        if proxy != nil, noProxy { throw ValidationError("--proxy and --no-proxy exclude each other; give one.") }
        if (certFile == nil) != (keyFile == nil) {
            throw ValidationError(
                certFile == nil
                    ? "--key needs --cert: the client certificate for that key."
                    : "--cert needs --key: the client certificate's private key.")
        }
        if let proxy, !proxy.isEmpty { _ = try parsedProxy(proxy) }
    }

    /// The TLS settings, the files read now with this process's rights.
    func tls() throws(TransferError) -> TLSSettings {
        try TLSSettings.load(caFile: caFile, caPath: caPath, certFile: certFile, keyFile: keyFile)
    }

    /// The proxy settings: `--no-proxy`, `--proxy`, or the environment's.
    func proxySettings(environment: [String: String] = ProcessInfo.processInfo.environment) throws(TransferError)
        -> ProxySettings
    {
        // As curl: an empty --proxy means none.
        if noProxy || proxy == "" { return .direct }
        let fromEnvironment = try ProxySettings.environment(environment)
        guard let proxy else { return fromEnvironment }
        return fromEnvironment.replacingProxies(with: try ProxyServer.parse(proxy, origin: "--proxy"))
    }

    private func parsedProxy(_ text: String) throws -> ProxyServer {
        do throws(TransferError) {
            return try ProxyServer.parse(text, origin: "--proxy")
        } catch {
            throw ValidationError(error.message)
        }
    }
}
