import MeterwiseClient
import Transfer

extension Engine {
    /// A job's TLS settings and proxy: its CA and client certificate files read with its owner's rights
    /// (never the daemon's), the daemon's CA bundle when the job names no CA, and its proxy — its own, none
    /// for `""`, else the daemon's (whose no_proxy list applies to a job's proxy too).
    func connection(for record: JobRecord) throws(TransferError) -> (tls: TLSSettings, proxy: ProxySettings) {
        let tls = try TLSSettings.load(
            caFile: record.caFile, certFile: record.certFile, keyFile: record.keyFile,
            extraTrust: configuration.caBundle,
            identity: record.owner.identity, names: .api)
        return (tls, try proxySettings(for: record))
    }

    func proxySettings(for record: JobRecord) throws(TransferError) -> ProxySettings {
        switch record.proxy {
        case nil: return configuration.proxy
        case ""?: return .direct
        case let text?: return configuration.proxy.replacingProxies(with: try ProxyServer.parse(text, origin: "proxy"))
        }
    }

    /// The proxy the job's requests go through, nil when direct (for `status`).
    func proxy(for record: JobRecord) -> ProxyServer? {
        // Most jobs have no proxy of their own and the daemon none either: no URL to read then.
        if record.proxy == ""
            || (record.proxy == nil && configuration.proxy.http == nil && configuration.proxy.https == nil)
        {
            return nil
        }
        return (try? proxySettings(for: record))?.server(for: record.url)
    }
}
