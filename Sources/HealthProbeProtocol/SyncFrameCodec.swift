import NIOCore

/// Decodes frames, refusing a declared length over `maxLength` as soon as the
/// length field is read (before any payload is buffered). NIOExtras'
/// `LengthFieldBasedFrameDecoder` has no maximum of its own and buffers whole
/// frames first, so the length is peeked here and the frame then taken with
/// NIO's `readLengthPrefixedSlice`.
public struct SyncFrameDecoder: NIOSingleStepByteToMessageDecoder {
    public typealias InboundOut = SyncFrame
    public let maxLength: Int

    public init(maxLength: Int = SyncFrame.maxLength) { self.maxLength = maxLength }

    public mutating func decode(buffer: inout ByteBuffer) throws -> SyncFrame? {
        guard let length = buffer.getInteger(at: buffer.readerIndex, endianness: .big, as: UInt32.self) else { return nil }
        guard length > 0 else { throw SyncProtocolError(.malformedFrame, "a frame declares length 0 (it must at least hold its type byte)") }
        guard length <= maxLength else {
            throw SyncProtocolError(.frameTooLarge, "a frame declares \(length) bytes; the maximum is \(maxLength)")
        }
        guard var body = buffer.readLengthPrefixedSlice(endianness: .big, as: UInt32.self) else { return nil }
        let typeByte: UInt8 = body.readInteger()!
        guard let kind = SyncFrame.Kind(rawValue: typeByte) else {
            throw SyncProtocolError(.malformedFrame, String(format: "unknown frame type 0x%02x", typeByte))
        }
        return SyncFrame(kind: kind, payload: body)
    }

    public mutating func decodeLast(buffer: inout ByteBuffer, seenEOF: Bool) throws -> SyncFrame? {
        if let frame = try decode(buffer: &buffer) { return frame }
        if seenEOF && buffer.readableBytes > 0 {
            throw SyncProtocolError(.malformedFrame, "the connection ended in the middle of a frame (\(buffer.readableBytes) bytes of it arrived)")
        }
        return nil
    }
}

/// Encodes frames.
public struct SyncFrameEncoder: MessageToByteEncoder {
    public typealias OutboundIn = SyncFrame
    public init() {}

    public func encode(data: SyncFrame, out: inout ByteBuffer) throws {
        let length = data.payload.readableBytes + 1
        guard length <= SyncFrame.maxLength else {
            throw SyncProtocolError(.frameTooLarge, "refusing to send a \(length)-byte frame; the maximum is \(SyncFrame.maxLength)")
        }
        out.writeInteger(UInt32(length), endianness: .big)
        out.writeInteger(data.kind.rawValue)
        var payload = data.payload
        out.writeBuffer(&payload)
    }
}

/// Decodes the peer's hello (the first eight bytes of a connection).
public struct SyncHelloDecoder: NIOSingleStepByteToMessageDecoder {
    public typealias InboundOut = SyncHello
    /// The versions accepted (a server of an earlier build: tests).
    let versions: ClosedRange<UInt16>
    public init(versions: ClosedRange<UInt16> = SyncHello.versions) { self.versions = versions }

    public mutating func decode(buffer: inout ByteBuffer) throws -> SyncHello? {
        // Refuse a wrong magic as soon as its first bytes are in.
        let available = min(buffer.readableBytes, 4)
        if let head = buffer.getBytes(at: buffer.readerIndex, length: available), head != Array(SyncHello.magic.prefix(available)) {
            throw SyncProtocolError(.badMagic, "the peer did not start with the HealthProbe sync hello")
        }
        guard buffer.readableBytes >= 8 else { return nil }
        buffer.moveReaderIndex(forwardBy: 4)
        let version: UInt16 = buffer.readInteger(endianness: .big)!
        let flags: UInt16 = buffer.readInteger(endianness: .big)!
        guard versions.contains(version) else {
            throw SyncProtocolError(.protocolVersion, "the peer speaks sync protocol version \(version); this build speaks \(versions.lowerBound) to \(versions.upperBound)")
        }
        return SyncHello(version: version, flags: flags)
    }

    public mutating func decodeLast(buffer: inout ByteBuffer, seenEOF: Bool) throws -> SyncHello? {
        if let hello = try decode(buffer: &buffer) { return hello }
        if seenEOF && buffer.readableBytes > 0 {
            throw SyncProtocolError(.badMagic, "the connection ended in the middle of the hello")
        }
        return nil
    }
}
