import HealthProbeCanonical

/// The manifest hash of a bundle's lines taken as they are written (Protocol/bundles.md
/// section 3): the header's and the trailer's bytes and each item line's hash, nothing
/// parsed. For a bundle whose lines are canonical (every bundle a verification passes)
/// it is the manifest hash; a replica rebuild gives it to the applier, whose
/// verification of every line then checks it (and refuses the bundle at the line that
/// fails), instead of verifying each bundle twice.
public enum WrittenManifestHash {
    /// The header line and the manifest hash; nil when there are fewer than two lines.
    public static func compute(lines: some Sequence<[UInt8]>) -> (header: [UInt8], manifestHash: String)? {
        var it = lines.makeIterator()
        guard let header = it.next(), var pending = it.next() else { return nil }
        var stream = SHA256Stream(domain: .manifest)
        stream.update(header)
        stream.update([0x0A])
        // An item hash's 64 hex digits and a newline.
        var line = [UInt8](repeating: 0x0A, count: 65)
        while let next = it.next() {
            let itemHash = ArchiveHasher.sha256Digest(.item, pending)
            line.withUnsafeMutableBufferPointer { itemHash.writeHex(to: $0.baseAddress!) }
            stream.update(line)
            pending = next
        }
        // The last line is the trailer.
        stream.update(pending)
        return (header, stream.finalize())
    }
}
