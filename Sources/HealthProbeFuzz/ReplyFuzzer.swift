import Foundation
import HealthProbeCanonical
import HealthProbeCLI
import HealthProbeProtocol
import NIOCore

/// The node's side: one frame from a server (the first byte picks the kind, the rest is
/// the payload) decoded as `ServerMessage`. Refused only with a protocol error; what is
/// accepted holds inside its documented ranges and, for a household report, encodes
/// again to a payload that decodes to the same report and prints without a trap.
enum ReplyFuzzer {
    static func run(_ data: UnsafeRawBufferPointer) -> String? {
        guard let first = data.first else { return nil }
        let payload = UnsafeRawBufferPointer(rebasing: data.dropFirst())
        let kinds = SyncFrame.Kind.allCases
        let kind = kinds[Int(first) % kinds.count]
        let message: ServerMessage
        do { message = try ServerMessage(SyncFrame(kind: kind, payload: ByteBuffer(bytes: payload))) } catch {
            guard error is SyncProtocolError else { return "\(kind.name) threw a non-protocol error: \(error)" }
            return nil
        }
        // Every JSON reply but HOUSEHOLD is accepted only in canonical form.
        if kind != .pong, kind != .household, kind != .restorePart {
            guard let value = try? JSONParser.parse(Array(payload)), let again = try? CanonicalJSON.encode(value), again.elementsEqual(payload) else {
                return "\(kind.name) accepted a payload that is not canonical JSON"
            }
        }
        switch message {
        case .authOK, .pong, .bundleAck, .restorePart:
            return nil
        case .restoreBundle(let r):
            let b = r.begin
            return b.sequence >= 1 && b.parts >= 1 && b.uncompressedSize >= 1 && r.visibleCount >= 0 && r.chainStateDigest.utf8.count == 64 ? nil
                : "RESTORE_BUNDLE accepted with sequence \(b.sequence), parts \(b.parts)"
        case .restoreStream(let b):
            return b.sequence >= 1 && b.parts >= 1 && b.uncompressedSize >= 1 ? nil : "RESTORE_STREAM accepted with sequence \(b.sequence), parts \(b.parts)"
        case .restoreState(let s):
            return s.sequence >= 1 && s.visibleCount >= 0 && s.chainStateDigest.utf8.count == 64 ? nil : "RESTORE_STATE accepted with sequence \(s.sequence)"
        case .chainStatus(let s):
            return s.lastSequence >= 0 && (s.lastSequence == 0) == (s.lastManifestHash == nil) ? nil : "CHAIN_STATUS accepted with last_sequence \(s.lastSequence)"
        case .error(let e):
            guard e.message.unicodeScalars.count <= SyncLimits.maxShownMessage + 1, e.message.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) else {
                return "ERROR kept a message that is too long or not printable"
            }
            return nil
        case .household(let report):
            guard let wire = try? HouseholdSummary.wireJSON(report) else { return "an accepted HOUSEHOLD report does not encode" }
            guard let again = try? HouseholdSummary.fromWire(wire) else { return "an accepted HOUSEHOLD report does not decode once encoded again" }
            guard again == report else { return "an accepted HOUSEHOLD report changes when encoded and decoded again" }
            _ = HouseholdTable.render(report, type: report.chains.first?.daily.first?.typeIdentifier ?? "type")
            return nil
        }
    }
}
