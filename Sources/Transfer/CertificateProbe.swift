import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// After a certificate failed to verify, one more connection to the server that reads the certificate
/// it presents and then aborts the handshake (nothing is sent), so the message can say *why*: expired,
/// not yet valid, another host's, or from an issuer this machine does not trust.
enum CertificateProbe {
    /// The facts of the server's leaf certificate, or nil when the server could not be reached within
    /// `timeout`.
    static func facts(host: String, port: Int, timeout: TimeAmount = .seconds(5)) async -> CertificateFacts? {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.certificateVerification = .fullVerification
        guard let context = try? NIOSSLContext(configuration: configuration) else { return nil }
        let found = Mutex<CertificateFacts?>(nil)
        let serverName = NoProxy.address(host) == nil ? host : nil
        do {
            let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(timeout)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let handler = try NIOSSLClientHandler(
                            context: context, serverHostname: serverName,
                            customVerificationCallback: { certificates, promise in
                                if let leaf = certificates.first { found.withLock { $0 = CertificateFacts(leaf) } }
                                promise.succeed(.failed)
                            })
                        try channel.pipeline.syncOperations.addHandler(handler)
                    }
                }
                .connect(host: host, port: port)
                .get()
            let deadline = channel.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
            try? await channel.closeFuture.get()
            deadline.cancel()
        } catch {
            return found.withLock { $0 }
        }
        return found.withLock { $0 }
    }
}
