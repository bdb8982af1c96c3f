import HealthProbeCanonical
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What `verify-export` found.
public struct ExportVerification: Sendable, Codable, Equatable {
    public var path: String
    public var kind: String?
    public var exportID: String?
    public var items: Int
    public var manifestHash: String?
    /// The file's `export_format_version` (nil when it could not be read).
    public var formatVersion: Int?
    /// Each problem names the line (and item) or field that does not match.
    public var problems: [String]
    public var ok: Bool { problems.isEmpty }
}

/// Recomputes every item hash and the manifest hash of an export from its
/// file(s) alone (docs/export-format.md), streaming line by line.
public enum ExportVerifier {
    /// With `strict`, every item is parsed and re-encoded (slower); otherwise items
    /// are hashed as they stand and parsed only when their hash does not match.
    public static func verify(path: String, strict: Bool = false) throws -> ExportVerification {
        guard FileManager.default.fileExists(atPath: path) else { throw ArchiveError(.notFound, "no file at \(path)") }
        if FileManager.default.fileExists(atPath: path + ".manifest.json") { return try verifyCSV(path: path) }
        return try verifyJSON(path: path, strict: strict)
    }

    static func decode(_ bytes: some Collection<UInt8>) -> [String: JSONValue]? {
        guard let v = try? JSONParser.parse(bytes), case .object(let o) = v else { return nil }
        return o
    }

    /// Counts as the exporter computes them, rebuilt from the items.
    struct Counter {
        var kind: String
        var byType: [String: Int] = [:]
        var relationships = 0
        var diff: [String: [String: Int]] = [:]
        var summaries = 0, daily = 0, observations = 0, bundles = 0

        mutating func add(_ o: [String: JSONValue]) {
            func str(_ key: String) -> String? { if case .string(let t)? = o[key] { return t }; return nil }
            add(kind: str("kind"), type: str("sample_type_identifier"), change: str("change"))
        }

        mutating func add(kind: String?, type: String?, change: String?) {
            guard let k = kind else { return }
            let type = type ?? ""
            switch k {
            case "record": byType[type, default: 0] += 1
            case "relationship": relationships += 1
            case "diff_entry": if let c = change { diff[type, default: [:]][c, default: 0] += 1 }
            case "type_summary": summaries += 1
            case "daily": daily += 1
            case "observation": observations += 1
            case "bundle": bundles += 1
            default: break
            }
        }

        var counts: JSONValue {
            switch kind {
            case ExportKind.observationDiffJSON.rawValue:
                return .object(["by_type": .object(diff.mapValues { .object($0.mapValues { .int($0) }) }),
                                "records": .int(diff.values.reduce(0) { $0 + $1.values.reduce(0, +) })])
            case ExportKind.typeSummaryJSON.rawValue:
                return .object(["records": .int(summaries + daily), "type_summaries": .int(summaries), "daily_rows": .int(daily)])
            case ExportKind.archiveManifestJSON.rawValue:
                return .object(["records": .int(observations + bundles), "observations": .int(observations), "bundles": .int(bundles)])
            default:
                return Exporter.counts(byType: byType, relationships: relationships)
            }
        }
    }

    /// The stated item hash and the item's bytes without the `item_hash` member.
    static func splitItemHash(_ line: [UInt8]) -> (String, [UInt8])? {
        let key = Array("\"item_hash\":\"".utf8)
        guard let i = find(key, in: line, from: 0), i > 0, i + key.count + 65 <= line.count, line[i + key.count + 64] == UInt8(ascii: "\"") else { return nil }
        let hash = String(decoding: line[(i + key.count)..<(i + key.count + 64)], as: UTF8.self)
        let end = i + key.count + 65
        if line[i - 1] == UInt8(ascii: ",") { return (hash, Array(line[..<(i - 1)] + line[end...])) }
        if line[i - 1] == UInt8(ascii: "{"), end < line.count, line[end] == UInt8(ascii: ",") { return (hash, Array(line[..<i] + line[(end + 1)...])) }
        return nil
    }

    /// The first `"key":"value"` string value in canonical item bytes (top-level
    /// members the verifier counts by come before any nested object that could repeat them).
    static func firstString(_ bytes: [UInt8], key: String) -> String? {
        let k = Array("\"\(key)\":\"".utf8)
        guard let i = find(k, in: bytes, from: 0) else { return nil }
        var j = i + k.count
        let start = j
        while j < bytes.count && bytes[j] != UInt8(ascii: "\"") { j += 1 }
        return String(decoding: bytes[start..<j], as: UTF8.self)
    }

    static func find(_ needle: [UInt8], in hay: [UInt8], from: Int) -> Int? {
        guard !needle.isEmpty, from + needle.count <= hay.count else { return nil }
        return hay.withUnsafeBufferPointer { h in
            needle.withUnsafeBufferPointer { n in
                let base = h.baseAddress!
                var i = from
                let last = h.count - n.count
                while i <= last {
                    // memchr for the first byte, memcmp for the rest.
                    guard let p = memchr(base + i, Int32(n[0]), last - i + 1) else { return nil }
                    let at = UnsafePointer<UInt8>(p.assumingMemoryBound(to: UInt8.self)) - base
                    if memcmp(base + at, n.baseAddress!, n.count) == 0 { return at }
                    i = at + 1
                }
                return nil
            }
        }
    }

    /// The spec's order key of a record item.
    static func orderKey(_ o: [String: JSONValue]) -> [String] {
        ["sample_type_identifier", "start_date", "end_date", "sample_identity_hash", "payload_hash"].map { k in
            if case .string(let s)? = o[k] { return s }; return ""
        }
    }

    static func verifyJSON(path: String, strict: Bool) throws -> ExportVerification {
        var report = ExportVerification(path: path, items: 0, problems: [])
        var lines = try FileLines(path: path)
        guard let first = lines.next() else { report.problems.append("line 1: the file is empty"); return report }
        let suffix = Array(",\"items\":[".utf8)
        guard first.count > suffix.count, Array(first.suffix(suffix.count)) == suffix, var header = decode(first + Array("]}".utf8)) else {
            report.problems.append("line 1: not an export envelope header (it must be the envelope up to `\"items\":[`)")
            return report
        }
        if case .string(let k)? = header["export_kind"] { report.kind = k }
        if case .string(let e)? = header["export_id"] { report.exportID = e }
        guard let kind = report.kind, ExportKind(rawValue: kind) != nil else {
            report.problems.append("line 1: export_kind is missing or unknown"); return report
        }
        guard case .number(let v)? = header["export_format_version"], let version = Int(exactly: v), ExportEnvelope.readableVersions.contains(version) else {
            report.problems.append("line 1: export_format_version must be one of \(ExportEnvelope.readableVersions.map(String.init).joined(separator: ", ")) (a newer HealthProbe may read this file)")
            return report
        }
        report.formatVersion = version
        var counter = Counter(kind: kind)
        var footer: [String: JSONValue]?
        var lineNo = 1
        var previousHadComma = true
        var lastKey: [String]?
        // Item hashes go into the manifest in order as they are checked.
        var manifestItems = SHA256Accumulator()
        while let raw = lines.next() {
            lineNo += 1
            if raw.starts(with: Array("],".utf8)) || raw == Array("]".utf8) {
                footer = decode(Array("{".utf8) + raw.dropFirst(2))
                if footer == nil { report.problems.append("line \(lineNo): the envelope's closing line is not valid JSON") }
                if previousHadComma && report.items > 0 { report.problems.append("line \(lineNo - 1): the last item must not end with a comma") }
                break
            }
            if !previousHadComma { report.problems.append("line \(lineNo - 1): items must be separated by a comma at the end of the line") }
            var body = raw[...]
            previousHadComma = body.last == UInt8(ascii: ",")
            if previousHadComma { body = body.dropLast() }
            report.items += 1
            // Fast path: an item is canonical JSON, so its hash input is its own bytes
            // without the item_hash member. Items are parsed only when that fails (or --strict).
            if !strict, let (stated, without) = splitItemHash(Array(body)), ArchiveHasher.sha256(.exportItem, without) == stated {
                counter.add(kind: firstString(without, key: "kind"), type: firstString(without, key: "sample_type_identifier"),
                            change: firstString(without, key: "change"))
                manifestItems.add(stated)
                continue
            }
            guard var o = decode(body) else { report.problems.append("line \(lineNo): item \(report.items) is not a JSON object"); continue }
            guard case .string(let stated)? = o.removeValue(forKey: "item_hash") else {
                report.problems.append("line \(lineNo): item \(report.items) has no item_hash"); continue
            }
            let canonicalBytes = try CanonicalJSON.encode(.object(o))
            let computed = ArchiveHasher.sha256(.exportItem, canonicalBytes)
            if computed == stated, !strict || splitItemHash(Array(body))?.1 != canonicalBytes {
                report.problems.append("line \(lineNo): item \(report.items) is not in canonical JSON form (its hash matches its parsed content)")
            }
            if computed != stated {
                var what = "item \(report.items)"
                if case .string(let id)? = o["sample_identity_hash"] { what += " (sample_identity_hash \(id.prefix(16))...)" }
                report.problems.append("line \(lineNo): \(what): item_hash does not match its content (stated \(stated.prefix(16))..., computed \(computed.prefix(16))...)")
            }
            if case .string("record")? = o["kind"] {
                let key = orderKey(o)
                if let lastKey, key.lexicographicallyPrecedes(lastKey) {
                    report.problems.append("line \(lineNo): item \(report.items) is out of the spec's order (type, start, end, identity, payload)")
                }
                lastKey = key
            }
            counter.add(o)
            manifestItems.add(stated)
        }
        guard let footer else {
            report.problems.append("line \(lineNo): the file ends before the envelope closes (truncated?)")
            return report
        }
        guard case .object(let manifest)? = footer["manifest"] else { report.problems.append("manifest: missing"); return report }
        if case .string(let h)? = manifest["manifest_hash"] { report.manifestHash = h }
        if manifest["record_count"] != .int(report.items) {
            report.problems.append("manifest.record_count: the file has \(report.items) items")
        }
        let counts = counter.counts
        if manifest["counts"] != counts { report.problems.append("manifest.counts: do not match the items") }
        header.removeValue(forKey: "export_id"); header.removeValue(forKey: "created_at"); header.removeValue(forKey: "items")
        header["provenance_warning"] = footer["provenance_warning"] ?? .null
        if footer["provenance_warning"] != .string(ProvenanceWarning.text) { report.problems.append("provenance_warning: missing or altered") }
        let filters = header["filters"] ?? .null
        let recomputed = try manifestItems.finish(metadata: .object(header), counts: manifest["counts"] ?? counts, filters: filters)
        if recomputed != report.manifestHash {
            report.problems.append("manifest.manifest_hash: does not match the envelope and items (computed \(recomputed))")
        }
        return report
    }

    static func verifyCSV(path: String) throws -> ExportVerification {
        var report = ExportVerification(path: path, items: 0, problems: [])
        guard let data = FileManager.default.contents(atPath: path + ".manifest.json"), var envelope = decode(data) else {
            report.problems.append("\(path).manifest.json: not a JSON object"); return report
        }
        if case .string(let k)? = envelope["export_kind"] { report.kind = k }
        if case .string(let e)? = envelope["export_id"] { report.exportID = e }
        guard case .object(let manifest)? = envelope["manifest"] else { report.problems.append("manifest: missing"); return report }
        if case .string(let h)? = manifest["manifest_hash"] { report.manifestHash = h }
        guard case .number(let v)? = envelope["export_format_version"], let version = Int(exactly: v),
              let recordColumns = CSVColumns.records(version: version) else {
            report.problems.append("\(path).manifest.json: export_format_version must be one of \(ExportEnvelope.readableVersions.map(String.init).joined(separator: ", ")) (a newer HealthProbe may read this file)")
            return report
        }
        report.formatVersion = version
        let layout = version == 1 ? CSVColumns.Layout.v1 : CSVColumns.Layout.v2
        var acc = SHA256Accumulator()
        var byType: [String: Int] = [:]
        var relationships = 0
        func check(file: String, columns: [String], isRecord: Bool) throws {
            var lines = try FileLines(path: file)
            guard let head = lines.next(), CSV.parse(utf8: head) == columns else {
                report.problems.append("\(file) line 1: the header row must be exactly: \(columns.joined(separator: ","))"); return
            }
            var lineNo = 1
            var scratch = CanonicalJSONWriter(capacity: 2048)
            while let raw = lines.next() {
                lineNo += 1
                if raw.isEmpty || raw == [0x0D] { continue }
                report.items += 1
                guard let f = CSV.parse(utf8: raw), f.count == columns.count else {
                    report.problems.append("\(file) line \(lineNo): expected \(columns.count) fields"); continue
                }
                if f[0] != report.exportID { report.problems.append("\(file) line \(lineNo): export_id differs from the manifest's") }
                let stated = f[isRecord ? layout.itemHashIndex : columns.count - 1]
                let computed: String
                if isRecord {
                    computed = try CSVColumns.recordHash(cells: f, layout: layout, scratch: &scratch) { column in
                        report.problems.append("\(file) line \(lineNo): \(columns[column]) is not a number")
                    }
                    byType[f[2], default: 0] += 1
                } else {
                    let item = RelationshipItems.item(kind: f[1], observation: Int64(f[2]), metadataHash: f[7].isEmpty ? nil : f[7], sourceType: f[3],
                                                      sourceIdentity: f[4], targetType: f[5], targetIdentity: f[6])
                    computed = ArchiveHasher.sha256(.exportItem, item)
                    relationships += 1
                }
                if computed != stated {
                    report.problems.append("\(file) line \(lineNo): item_hash does not match the row (\(isRecord ? "sample_identity_hash \(f[3].prefix(16))..." : "relationship"))")
                }
                acc.add(stated)
            }
        }
        try check(file: path, columns: recordColumns, isRecord: true)
        if case .object(let files)? = envelope["files"], case .string(let rel)? = files["relationships"] {
            let relPath = ((path as NSString).deletingLastPathComponent as NSString).appendingPathComponent(rel)
            if FileManager.default.fileExists(atPath: relPath) { try check(file: relPath, columns: CSVColumns.relationships, isRecord: false) }
            else { report.problems.append("\(relPath): the relationships file named by the manifest is missing") }
        }
        if manifest["record_count"] != .int(report.items) { report.problems.append("manifest.record_count: the files have \(report.items) rows") }
        let counts = Exporter.counts(byType: byType, relationships: relationships)
        if manifest["counts"] != counts { report.problems.append("manifest.counts: do not match the rows") }
        for k in ["export_id", "created_at", "manifest", "files"] { envelope.removeValue(forKey: k) }
        let recomputed = try acc.finish(metadata: .object(envelope), counts: manifest["counts"] ?? counts, filters: envelope["filters"] ?? .null)
        if recomputed != report.manifestHash { report.problems.append("manifest.manifest_hash: does not match the envelope and rows (computed \(recomputed))") }
        return report
    }
}

/// Item hashes collected in order for the manifest hash, which needs the
/// metadata first: the hashes are kept as a running digest of their own and
/// replayed (64 bytes each) into the manifest at the end.
struct SHA256Accumulator {
    private var spill: [UInt8] = []
    private var file: FileHandle?
    private var spillPath: String?

    mutating func add(_ hash: String) {
        spill.append(contentsOf: Array(hash.utf8))
        spill.append(0x0A)
        if spill.count >= 1 << 20 { flushToDisk() }
    }

    private mutating func flushToDisk() {
        if file == nil {
            let p = NSTemporaryDirectory() + "hp-verify-\(UUID().uuidString)"
            _ = FileManager.default.createFile(atPath: p, contents: nil)
            spillPath = p
            file = FileHandle(forUpdatingAtPath: p)
        }
        try? file?.write(contentsOf: spill)
        spill.removeAll(keepingCapacity: true)
    }

    consuming func finish(metadata: JSONValue, counts: JSONValue, filters: JSONValue) throws -> String {
        var s = SHA256Stream(domain: .exportManifest)
        s.update(try CanonicalJSON.encode(metadata))
        s.update([0x0A])
        if let file, let spillPath {
            try file.seek(toOffset: 0)
            while let chunk = try file.read(upToCount: 1 << 20), !chunk.isEmpty { s.update(Array(chunk)) }
            try? file.close()
            try? FileManager.default.removeItem(atPath: spillPath)
        }
        s.update(spill)
        s.update(try CanonicalJSON.encode(counts))
        s.update([0x0A])
        s.update(try CanonicalJSON.encode(filters))
        return s.finalize()
    }
}
