import Foundation
import HealthProbeCanonical

/// A bundle failed verification: which line (1-based: line 1 is the header),
/// which item kind and field, and why.
public struct BundleError: CodedError, Equatable {
    public enum Code: String, Sendable {
        case malformed, notCanonical = "not_canonical", unknownKind = "unknown_kind", order
        case itemHash = "item_hash", payloadHash = "payload_hash", metadataHash = "metadata_hash"
        case counts, manifestHash = "manifest_hash", chainLink = "chain_link"
        /// A member is missing, unknown, of the wrong type, out of its range, or not one of its kind's values.
        case field
        /// An item adds what the replica (or the bundle) already holds.
        case reference
        /// Applied, the bundle would leave the replica failing its own integrity checks.
        case replicaCheck = "replica_check"
        /// Items disagree with each other (a date, a count, a status, a category), or
        /// with the rows of the replica they name (Protocol/bundles.md sections 4.5, 5.2).
        case inconsistent
    }
    public let code: Code
    public var codeName: String? { code.rawValue }
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
/// canonical, kinds come in order, metadata and payload hashes recompute, the
/// items agree with each other (`BundleRules`), counts match, and the manifest
/// hash recomputes. Streaming: feed lines one at a time; memory grows with the
/// bundle's sample types only, never with its samples.
public struct BundleVerifier {
    private var header: BundleHeader?
    private var manifest: ManifestHasher?
    private var line = 0
    /// The kind of the last item read (items come in kind order).
    private var kind = BundleItemKind.observation
    private var done = false
    /// The rules between items (section 4.5).
    private var rules = BundleRules()
    public private(set) var manifestHash: String?
    /// Items read so far.
    public private(set) var itemCount = 0

    public init() {}

    /// Feeds the next line (without its newline); returns it decoded: the header, an
    /// item with its typed payload, or the trailer.
    @discardableResult
    public mutating func feed(_ bytes: [UInt8]) throws(BundleError) -> BundleLine {
        try feed(Self.decode(bytes, line: line + 1))
    }

    /// Feeds the next line as `decode` worked it out (on any thread, `line` the next
    /// line's number): the same checks, in the same order, as `feed(_ bytes:)`.
    @discardableResult
    public mutating func feed(_ decoded: DecodedLine) throws(BundleError) -> BundleLine {
        line += 1
        guard !done else { throw BundleError(.malformed, line: line, "data after the trailer") }
        precondition(decoded.line == line, "a decoded line fed out of order")
        switch decoded.content {
        case .failed(let error):
            throw error
        case .notObject:
            throw BundleError(.malformed, line: line, "line \(line) is not a JSON object")
        case .plain(let flat) where header == nil:
            guard case .object(let o) = flat.value else { throw BundleError(.malformed, line: line, "line \(line) is not a JSON object") }
            header = try Self.parseHeader(o, line: line)
            rules.sequence = header!.sequence
            do { manifest = try ManifestHasher(header: header!) } catch {
                throw BundleError(.malformed, line: line, "header cannot be hashed")
            }
            return .header(header!)
        case _ where header == nil:
            // An item where the header belongs: its members are not a header's.
            throw Self.headerMembers(line: line)
        case .plain(let flat):
            // The trailer.
            guard itemCount > 0 else { throw BundleError(.order, line: line, "line \(line): the bundle has no observation item") }
            let trailer = manifest!.trailer
            guard flat.value == trailer.json else {
                throw BundleError(.counts, line: line, "the trailer's counts do not match the \(trailer.itemCount) items read")
            }
            try rules.finish(line: line)
            done = true
            do { manifestHash = try manifest.take()!.finish() } catch {
                throw BundleError(.malformed, line: line, "trailer cannot be hashed")
            }
            return .trailer(trailer)
        case .unknownKind:
            throw BundleError(.unknownKind, line: line, "line \(line): unknown item kind")
        case .item(let kind, let decodedItem, let itemHash):
            // Format 1 has no new_sample: a format-1 reader does not know the kind (before its order is looked at).
            if kind == .newSample && header!.bundleFormat < 2 {
                throw BundleError(.unknownKind, line: line, "line \(line): new_sample items are bundle format 2; this bundle's header says bundle_format 1")
            }
            guard kind >= self.kind, (kind == .observation) == (line == 2) else {
                if line == 2 { throw BundleError(.order, line: line, "line 2: the first item must be the observation") }
                throw BundleError(.order, line: line, "line \(line): a \(kind.rawValue) item is out of order (Protocol/bundles.md, item order)")
            }
            self.kind = kind
            let item = try decodedItem.get()
            try rules.check(item, line: line)
            manifest!.add(itemHash: itemHash, kind: kind)
            itemCount += 1
            return .item(item)
        }
    }

    /// A line worked out on its own, before the lines around it are known: parsed
    /// (canonical form checked), its kind read, its item decoded and hashed. Lines can be
    /// decoded on several threads at once; `feed(_ decoded:)` then checks them in order.
    public struct DecodedLine: Sendable {
        /// The line's number (1-based: line 1 is the header).
        public let line: Int
        let content: Content

        enum Content: Sendable {
            /// Not JSON, or not in canonical form.
            case failed(BundleError)
            case notObject
            /// Line 1 (the header), or a line without a kind (the trailer).
            case plain(FlatJSON)
            case unknownKind
            /// An item: its kind, its typed item or why it is not one, and its item hash.
            case item(BundleItemKind, Result<BundleItem, BundleError>, Digest32)
        }
    }

    /// Works out line number `line` (its bytes without the newline) as far as it can alone.
    public static func decode(_ bytes: [UInt8], line: Int) -> DecodedLine {
        let flat: FlatJSON
        do { flat = try JSONParser.flat(bytes) } catch {
            guard (try? JSONParser.parse(bytes)) != nil else {
                return DecodedLine(line: line, content: .failed(BundleError(.malformed, line: line, "line \(line) is not JSON (\(error))")))
            }
            return DecodedLine(line: line, content: .failed(BundleError(.notCanonical, line: line, "line \(line) is not in canonical JSON form (RFC 8785): \(error)")))
        }
        guard flat.isObject else { return DecodedLine(line: line, content: .notObject) }
        guard line > 1, let kindIndex = flat.find("kind") else { return DecodedLine(line: line, content: .plain(flat)) }
        // The kind's position found from its bytes (no string built for it).
        guard let r = flat.plainRange(kindIndex), let kind = BundleItemKind(flat.bytes, r) else {
            return DecodedLine(line: line, content: .unknownKind)
        }
        let item: Result<BundleItem, BundleError>
        do throws(BundleError) { item = .success(try BundleItem.decode(flat, kind: kind, line: line)) } catch { item = .failure(error) }
        return DecodedLine(line: line, content: .item(kind, item, ArchiveHasher.sha256Digest(.item, bytes)))
    }

    /// The lines ended; `unterminated` when the last one had no newline after it
    /// (every line of a bundle ends with one, the trailer's too: section 2).
    public mutating func endOfLines(unterminated: Bool) throws(BundleError) {
        if unterminated { throw BundleError(.malformed, line: line, "line \(line) does not end with a newline (every line of a bundle does, the trailer's too)") }
    }

    /// Feeds every line of `lines` and ends them (`endOfLines`): a source that tells
    /// whether its last line ended with a newline (`LineEndReporting`) is held to it.
    public mutating func feed<S: Sequence<[UInt8]>>(all lines: S, each: (BundleLine) throws -> Void = { _ in }) throws {
        var iterator = lines.makeIterator()
        while let bytes = iterator.next() { try each(try feed(bytes)) }
        try endOfLines(unterminated: (iterator as? any LineEndReporting)?.lastLineUnterminated ?? false)
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

    /// The header in line 1 of a bundle, checked as a verifier checks it.
    public static func header(_ line: [UInt8]) throws(BundleError) -> BundleHeader {
        guard case .object(let o)? = try? JSONParser.parse(line, canonical: true) else {
            throw BundleError(.malformed, line: 1, "the bundle does not start with a header (a canonical JSON object)")
        }
        return try parseHeader(o, line: 1)
    }

    /// A header whose members are not exactly the five a header has.
    static func headerMembers(line: Int) -> BundleError {
        BundleError(.malformed, line: line, "header: must have exactly bundle_format, device_chain_hash, observation_id, previous_manifest_hash and sequence")
    }

    /// Sequences and observation ids: 1 to 2^53 - 1, the range the frames carry
    /// (Protocol/README.md section 2.1): every integer in it is exact in JSON.
    public static let sequences: ClosedRange<Int64> = 1...((1 << 53) - 1)

    static func parseHeader(_ o: [String: JSONValue], line: Int) throws(BundleError) -> BundleHeader {
        func fail(_ why: String) -> BundleError { BundleError(.malformed, line: line, "header: \(why)") }
        guard Set(o.keys) == ["bundle_format", "device_chain_hash", "observation_id", "previous_manifest_hash", "sequence"] else {
            throw headerMembers(line: line)
        }
        guard case .number(let f)? = o["bundle_format"], let format = BundleHeader.formats.first(where: { Double($0) == f }) else {
            throw fail("bundle_format must be 1 or 2")
        }
        guard case .string(let chain)? = o["device_chain_hash"], ArchiveHasher.isLowerHex(chain.utf8) else {
            throw fail("device_chain_hash must be 64 lower-case hex digits")
        }
        // Compared as doubles before any conversion: 2^63 or 1e300 never reaches Int().
        func integer(_ name: String) throws(BundleError) -> Int64 {
            guard case .number(let d)? = o[name], d == d.rounded(.towardZero), d >= Double(sequences.lowerBound), d <= Double(sequences.upperBound),
                  let v = Int64(exactly: d) else {
                throw fail("\(name) must be an integer in 1...\(sequences.upperBound)")
            }
            return v
        }
        let sequence = try integer("sequence"), observation = try integer("observation_id")
        var prev: String?
        switch o["previous_manifest_hash"] {
        case .string(let p)? where ArchiveHasher.isLowerHex(p.utf8): prev = p
        case .null?: prev = nil
        default: throw fail("previous_manifest_hash must be 64 lower-case hex digits or null")
        }
        guard (prev == nil) == (sequence == 1) else { throw fail("previous_manifest_hash must be null exactly when sequence is 1") }
        return BundleHeader(deviceChainHash: chain, sequence: Int(sequence), observationId: observation, previousManifestHash: prev, format: format)
    }
}

/// One line of a bundle as the verifier decoded it.
public enum BundleLine: Sendable {
    case header(BundleHeader)
    case item(BundleItem)
    case trailer(BundleTrailer)
}
