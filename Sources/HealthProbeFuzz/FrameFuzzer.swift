import Foundation
import HealthProbeProtocol
import HealthProbeServer
import NIOCore

/// The server's side of a connection fed with fuzzed bytes, as `SyncServer`
/// runs it, minus TLS, the registry and the replica: every credential is
/// accepted, every bundle that completes is checked against what it declared.
enum FrameFuzzer {
    static let session = ServerSessionStateMachine.Session(identity: DeviceRegistry.Identity(id: 1, name: "fuzz"), clockOffset: 0)
    static let directory: String = {
        let d = NSTemporaryDirectory() + "hp-fuzz-frames-\(getpid())"
        try? FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        return d
    }()

    static func run(_ data: UnsafeRawBufferPointer) -> String? {
        var buffer = ByteBuffer(bytes: data)
        var decoder = SyncConnectionDecoder(maxFrameLength: 1 << 20)
        var machine = ServerSessionStateMachine()
        defer { machine.closed()?.discard() }
        var eof = false
        while true {
            let message: SyncInbound?
            do {
                message = eof ? try decoder.decodeLast(buffer: &buffer, seenEOF: true) : try decoder.decode(buffer: &buffer)
            } catch {
                guard error is SyncProtocolError else { return "the decoder threw a non-protocol error: \(error)" }
                return nil
            }
            guard let message else {
                if eof { return nil }
                eof = true
                continue
            }
            switch machine.received(message) {
            case .none, .refuse, .fail:
                return nil
            case .sendHello, .sendPong, .chainStatus, .household, .restore:
                continue
            case .authenticate:
                machine.authenticated(session)
            case .openBundle:
                guard let file = try? QuarantineFile(directory: directory) else { return "cannot create a quarantine file in \(directory)" }
                machine.bundleOpened(file)
            case .writePart(let file, let part):
                do {
                    let written = try file.write(part)
                    if machine.partWritten(newlines: written.newlines, lastByte: written.lastByte, tail: written.tail) != nil { return nil }
                } catch {
                    guard error is SyncProtocolError else { return "a part failed with a non-protocol error: \(error)" }
                    return nil
                }
            case .applyBundle(_, let transfer, let declared):
                // The machine let a bundle through: it must be exactly what BUNDLE_BEGIN (or BUNDLE_STREAM_END) declared.
                transfer.file.finish()
                // The kept form (gzip members) must read back whole, to the declared size.
                guard let kept = try? GzipParts.Lines(path: transfer.file.path) else { return "the quarantine file cannot be read back" }
                var size = transfer.newlines
                for line in kept { size += line.count }
                if let failure = kept.failure { return "the quarantine file does not read back: \(failure)" }
                guard size == declared.uncompressedSize, transfer.declared == declared else {
                    return "a bundle of \(size) bytes passed as the \(declared.uncompressedSize) declared"
                }
                guard transfer.lines == declared.itemCount + 2 else { return "a bundle of \(transfer.lines) lines passed as \(declared.itemCount) items" }
                transfer.file.discard()
                machine.bundleFinished()
            }
        }
    }
}
