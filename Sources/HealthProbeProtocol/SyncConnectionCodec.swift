import Foundation
import HealthProbeCanonical
import NIOCore

/// What arrives on a sync connection: first the peer's hello, then frames.
public enum SyncInbound: Sendable, Equatable {
    case hello(SyncHello)
    case frame(SyncFrame)
}

/// What is sent on a sync connection.
public enum SyncOutbound: Sendable {
    case hello(SyncHello)
    case frame(SyncFrame)
}

/// Decodes a connection: the hello, then frames (each with the 16 MiB limit).
public struct SyncConnectionDecoder: NIOSingleStepByteToMessageDecoder {
    public typealias InboundOut = SyncInbound
    private var hello: SyncHelloDecoder
    private var frames: SyncFrameDecoder
    private var helloDone = false

    /// `versions`: the hello versions accepted (a server of an earlier build: tests).
    public init(maxFrameLength: Int = SyncFrame.maxLength, versions: ClosedRange<UInt16> = SyncHello.versions) {
        frames = SyncFrameDecoder(maxLength: maxFrameLength)
        hello = SyncHelloDecoder(versions: versions)
    }

    public mutating func decode(buffer: inout ByteBuffer) throws -> SyncInbound? {
        if !helloDone {
            guard let h = try hello.decode(buffer: &buffer) else { return nil }
            helloDone = true
            return .hello(h)
        }
        // A second hello would read as a frame length of 0x48505359, over any maximum:
        // it is handed on as the hello it is (the session answers `unexpected_message`).
        if let head = buffer.getBytes(at: buffer.readerIndex, length: 4), head == SyncHello.magic, frames.maxLength < 0x4850_5359 {
            guard buffer.readableBytes >= 8 else { return nil }
            buffer.moveReaderIndex(forwardBy: 4)
            let version: UInt16 = buffer.readInteger(endianness: .big)!
            let flags: UInt16 = buffer.readInteger(endianness: .big)!
            return .hello(SyncHello(version: version, flags: flags))
        }
        return try frames.decode(buffer: &buffer).map(SyncInbound.frame)
    }

    public mutating func decodeLast(buffer: inout ByteBuffer, seenEOF: Bool) throws -> SyncInbound? {
        if !helloDone { return try hello.decodeLast(buffer: &buffer, seenEOF: seenEOF).map { helloDone = true; return .hello($0) } }
        return try frames.decodeLast(buffer: &buffer, seenEOF: seenEOF).map(SyncInbound.frame)
    }
}

/// Encodes hellos and frames.
public struct SyncConnectionEncoder: MessageToByteEncoder {
    public typealias OutboundIn = SyncOutbound
    public init() {}

    public func encode(data: SyncOutbound, out: inout ByteBuffer) throws {
        switch data {
        case .hello(let h): h.write(to: &out)
        case .frame(let f): try SyncFrameEncoder().encode(data: f, out: &out)
        }
    }
}

extension SyncFrame {
    /// A frame whose payload is the canonical JSON of `value`.
    public static func json(_ kind: Kind, _ value: JSONValue) throws -> SyncFrame {
        SyncFrame(kind: kind, payload: ByteBuffer(bytes: try CanonicalJSON.encode(value)))
    }

    /// The payload as a JSON object.
    public func jsonObject() throws -> [String: JSONValue] {
        guard case .object(let o)? = try? JSONParser.parse(payload.readableBytesView) else {
            throw SyncProtocolError(.malformedFrame, "a \(kind) frame's payload is not a JSON object")
        }
        return o
    }

    /// An `ERROR` frame.
    public static func error(_ e: SyncProtocolError, sequence: Int? = nil) -> SyncFrame {
        (try? .json(.error, .object(["code": .string(e.code.rawValue), "message": .string(e.message),
                                      "retryable": .bool(e.code.retryable), "sequence": .optional(sequence)]))) ?? SyncFrame(kind: .error, payload: ByteBuffer())
    }
}
