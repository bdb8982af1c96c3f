import ArgumentParser
import Foundation
import HealthProbeArchive
import HealthProbeSync
import Logging
import ServiceLifecycle

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve the sync protocol on HOST:PORT (Protocol/README.md).",
        discussion: "Bundles are verified and applied in one transaction each, then acknowledged. SIGTERM or Ctrl-C shuts down gracefully: a bundle being applied finishes (or was never started); a bundle still arriving is discarded with its quarantine file. Plain TCP: use it on a trusted network until TLS and enrollment arrive.")

    @OptionGroup var options: DataOptions

    @Option(name: .long, help: "Address to listen on, HOST:PORT (port 0: any free port, printed).")
    var listen: String = "127.0.0.1:7447"

    func run() async throws {
        guard let (host, port) = SyncAddress.parse(listen, allowAnyPort: true) else {
            throw ValidationError("--listen must be HOST:PORT, got \(listen)")
        }
        let level = ProcessInfo.processInfo.environment["HP_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .info
        LoggingSystem.bootstrap { label in
            var h = StreamLogHandler.standardError(label: label)
            h.logLevel = level
            return h
        }
        let logger = Logger(label: "healthprobe.server")
        let service = SyncService(server: SyncServer(store: options.store, logger: logger), host: host, port: port)
        let group = ServiceGroup(configuration: .init(services: [.init(service: service)], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
        logger.info("sync server stopped")
    }
}

/// The sync server as a `Service`: a graceful shutdown cancels the accept loop
/// and the connection tasks; applies are transactions, so none is left half done.
struct SyncService: Service {
    let server: SyncServer
    let host: String
    let port: Int

    func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                try await server.run(host: host, port: port) { bound in
                    // Unbuffered, so a supervisor or script reading a pipe sees it at once.
                    FileHandle.standardOutput.write(Data("listening on \(host):\(bound)\n".utf8))
                }
            }
        } catch is CancellationError {
            // Graceful shutdown.
        }
    }
}
