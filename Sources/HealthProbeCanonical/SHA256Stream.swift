import Crypto

/// A domain-prefixed SHA-256 fed incrementally.
public struct SHA256Stream {
    private var h = SHA256()

    public init(domain: HashDomain) { h.update(data: domain.prefix) }

    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { h.update(bufferPointer: $0) }
    }

    public mutating func update(bufferPointer: UnsafeRawBufferPointer) {
        h.update(bufferPointer: bufferPointer)
    }

    public consuming func finalize() -> String { h.finalize().hex }
}
