/// The fuzz targets (docs/fuzzing.md). Each takes any bytes, must never crash,
/// and returns a finding when a property it checks fails.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// Bytes as a client's side of a connection: the hello and frame decoders,
    /// typed message decoding and the server's session state machine, parts
    /// inflated into a real quarantine file.
    case frames
    /// One frame payload of each client kind (the first byte picks the kind), an
    /// enrollment token, a bundle header line and a household reply.
    case messages
    /// One frame payload of each server kind (the first byte picks the kind): the
    /// node's decoding of replies, and the household table it prints.
    case replies
    /// A whole bundle file as sent (header, items, trailer): the streaming
    /// verifier, with the manifest hash recomputed from the bytes so that its
    /// checks past the hash are reached.
    case verify
    /// A header and items: hashes, trailer and manifest recomputed, then verified
    /// and applied to a scratch replica. Anything accepted must leave the replica
    /// passing every integrity check; anything refused must leave it unchanged.
    case apply
    /// A Health Auto Export JSON body: the decoder never traps, refuses only with
    /// its own error, and what it accepts is in range.
    case hae

    /// Runs `data` through the target; a description of what failed, or nil.
    public func run(_ data: UnsafeRawBufferPointer) -> String? {
        switch self {
        case .frames: return FrameFuzzer.run(data)
        case .messages: return MessageFuzzer.run(data)
        case .replies: return ReplyFuzzer.run(data)
        case .verify: return BundleFuzzer.verify(data)
        case .apply: return BundleFuzzer.apply(data)
        case .hae: return HAEFuzzer.run(data)
        }
    }

    public func run(_ bytes: [UInt8]) -> String? { bytes.withUnsafeBytes { run($0) } }
}
