import Foundation
import HealthProbeArchive
import HealthProbeCanonical
import HealthProbeProtocol
import NIOCore

/// Payload decoders on their own: the first byte picks the frame kind, the rest is the payload.
enum MessageFuzzer {
    static func run(_ data: UnsafeRawBufferPointer) -> String? {
        guard let first = data.first else { return nil }
        let payload = UnsafeRawBufferPointer(rebasing: data.dropFirst())
        let kinds = SyncFrame.Kind.allCases
        let kind = kinds[Int(first) % kinds.count]
        let frame = SyncFrame(kind: kind, payload: ByteBuffer(bytes: payload))
        do {
            let message = try ClientMessage(frame)
            // A JSON message is accepted only in canonical form.
            if kind != .bundlePart, kind != .ping {
                guard let value = try? JSONParser.parse(Array(payload)), let again = try? CanonicalJSON.encode(value), again.elementsEqual(payload) else {
                    return "\(message.kind) accepted a payload that is not canonical JSON"
                }
            }
        } catch {
            guard error is SyncProtocolError else { return "\(kind) threw a non-protocol error: \(error)" }
        }
        let bytes = Array(payload)
        _ = try? EnrollmentToken(text: String(decoding: bytes, as: UTF8.self))
        _ = try? HouseholdSummary.fromWire(bytes)
        _ = try? BundleVerifier.header(bytes)
        _ = try? frame.jsonObject()
        return nil
    }
}
