import Foundation

/// A bundle failed verification: which line (1-based: line 1 is the header),
/// which item kind and field, and why.
public struct BundleError: CodedError, Equatable {
    public enum Code: String, Sendable {
        case malformed, notCanonical = "not_canonical", unknownKind = "unknown_kind", order
        case itemHash = "item_hash", payloadHash = "payload_hash", metadataHash = "metadata_hash"
        case counts, manifestHash = "manifest_hash", chainLink = "chain_link"
    }
    public let code: Code
    public let message: String
    public var cause: (any Error)? { nil }
    public let line: Int?

    public init(_ code: Code, line: Int?, _ message: String) {
        self.code = code
        self.line = line
        self.message = message
    }

    public static func == (a: BundleError, b: BundleError) -> Bool { a.code == b.code && a.line == b.line }
}

/// Verifies an observation bundle in its line form (header, items, trailer,
/// each canonical JSON on its own line) from the bytes alone: every item is
/// canonical, kinds come in order, metadata and payload hashes recompute,
/// counts match, and the manifest hash recomputes. Streaming: feed lines one
/// at a time; memory does not grow with the bundle.
public struct BundleVerifier {
    private var header: BundleHeader?
    private var manifest: ManifestHasher?
    private var line = 0
    private var kindIndex = 0
    private var done = false
    public private(set) var manifestHash: String?
    /// Items read so far.
    public private(set) var itemCount = 0

    public init() {}

    /// Feeds the next line (without its newline); returns it parsed (flat: its
    /// members' byte ranges, no values built).
    @discardableResult
    public mutating func feed(_ bytes: [UInt8]) throws(BundleError) -> FlatJSON {
        line += 1
        guard !done else { throw BundleError(.malformed, line: line, "data after the trailer") }
        let flat: FlatJSON
        do { flat = try JSONParser.flat(bytes) } catch {
            guard (try? JSONParser.parse(bytes)) != nil else { throw BundleError(.malformed, line: line, "line \(line) is not JSON (\(error))") }
            throw BundleError(.notCanonical, line: line, "line \(line) is not in canonical JSON form (RFC 8785): \(error)")
        }
        guard flat.isObject else { throw BundleError(.malformed, line: line, "line \(line) is not a JSON object") }
        if header == nil {
            guard case .object(let o) = flat.value else { throw BundleError(.malformed, line: line, "line \(line) is not a JSON object") }
            header = try Self.parseHeader(o, line: line)
            do { manifest = try ManifestHasher(header: header!) } catch {
                throw BundleError(.malformed, line: line, "header cannot be hashed")
            }
            return flat
        }
        guard let kindIndex = flat.find("kind") else {
            // The trailer.
            let trailer = manifest!.trailer
            guard flat.value == trailer.json else {
                throw BundleError(.counts, line: line, "the trailer's counts do not match the \(trailer.itemCount) items read")
            }
            done = true
            do { manifestHash = try manifest.take()!.finish() } catch {
                throw BundleError(.malformed, line: line, "trailer cannot be hashed")
            }
            return flat
        }
        guard let kind = flat.string(at: kindIndex), let k = ObservationBundleBuilder.kinds.firstIndex(of: kind) else {
            throw BundleError(.unknownKind, line: line, "line \(line): unknown item kind")
        }
        guard k >= self.kindIndex, kind != "observation" || line == 2 else {
            throw BundleError(.order, line: line, "line \(line): a \(kind) item is out of order (Protocol/bundles.md, item order)")
        }
        self.kindIndex = k
        try Self.checkContent(kind, flat, line: line)
        manifest!.add(itemHash: ArchiveHasher.sha256(.item, bytes), kind: kind)
        itemCount += 1
        return flat
    }

    /// Ends verification: the bundle must have had its trailer; the manifest
    /// hash must equal `expected` when given; the chain link must equal
    /// `previousManifestHash` when given.
    public mutating func finish(expected: String?, previousManifestHash: String?? = .none) throws(BundleError) -> BundleHeader {
        guard done, let header, let manifestHash else { throw BundleError(.malformed, line: nil, "the bundle ends before its trailer (truncated)") }
        if let expected, expected != manifestHash {
            throw BundleError(.manifestHash, line: nil, "the manifest hash does not match: computed \(manifestHash), expected \(expected)")
        }
        if case .some(let prev) = previousManifestHash, prev != header.previousManifestHash {
            throw BundleError(.chainLink, line: 1, "the bundle does not follow the previous bundle of its chain (previous_manifest_hash differs)")
        }
        return header
    }

    static func parseHeader(_ o: [String: JSONValue], line: Int) throws(BundleError) -> BundleHeader {
        guard case .number(let f)? = o["bundle_format"], f == 1 else {
            throw BundleError(.malformed, line: line, "header: bundle_format must be 1")
        }
        guard case .string(let chain)? = o["device_chain_hash"], chain.count == 64,
              case .number(let seq)? = o["sequence"], seq >= 1, seq == seq.rounded(),
              case .number(let obs)? = o["observation_id"] else {
            throw BundleError(.malformed, line: line, "header: device_chain_hash, sequence or observation_id missing or invalid")
        }
        var prev: String?
        switch o["previous_manifest_hash"] {
        case .string(let p)?: prev = p
        case .null?: prev = nil
        default: throw BundleError(.malformed, line: line, "header: previous_manifest_hash missing")
        }
        guard o.count == 5 else { throw BundleError(.malformed, line: line, "header: unexpected fields") }
        return BundleHeader(deviceChainHash: chain, sequence: Int(seq), observationId: Int64(obs), previousManifestHash: prev)
    }

    /// The hashes an item carries over its own content: a metadata item's hash
    /// of its JSON text, a version's payload hash of its payload's canonical bytes.
    static func checkContent(_ kind: String, _ o: FlatJSON, line: Int) throws(BundleError) {
        switch kind {
        case "metadata":
            guard let json = o.string("metadata_json"), let hash = o.string("metadata_hash") else {
                throw BundleError(.malformed, line: line, "line \(line): metadata item lacks metadata_json or metadata_hash")
            }
            guard ArchiveHasher.sha256(.metadata, json) == hash else {
                throw BundleError(.metadataHash, line: line, "line \(line): metadata_hash does not match metadata_json")
            }
        case "version":
            guard let payload = o.object("payload"), let hash = o.string("payload_hash") else {
                throw BundleError(.malformed, line: line, "line \(line): version item lacks payload or payload_hash")
            }
            let computed = o.bytes.withUnsafeBytes { ArchiveHasher.sha256(.payload, buffer: UnsafeRawBufferPointer(rebasing: $0[o.valueRange(payload)])) }
            guard computed == hash else {
                throw BundleError(.payloadHash, line: line, "line \(line): payload_hash does not match the payload")
            }
        default:
            break
        }
    }
}
