import Foundation
import HealthProbeCanonical

/// The manifest hash of an export, fed incrementally (docs/export-format.md):
///
///     SHA-256( "hp:v2:export_manifest:"
///              + canonical(metadata) + "\n"
///              + for each item in order: item_hash + "\n"
///              + canonical(counts) + "\n"
///              + canonical(filters) )
///
/// `metadata` is the envelope without `export_id`, `created_at`, `items` and
/// `manifest`, so two exports of the same scope have the same manifest hash.
public struct ExportManifestHasher {
    private var stream = SHA256Stream(domain: .exportManifest)
    public private(set) var itemCount = 0

    public init(metadata: JSONValue) throws(HashingError) {
        stream.update(try CanonicalJSON.encode(metadata))
        stream.update([0x0A])
    }

    public mutating func add(itemHash: String) {
        stream.update(Array(itemHash.utf8))
        stream.update([0x0A])
        itemCount += 1
    }

    public consuming func finish(counts: JSONValue, filters: JSONValue) throws(HashingError) -> String {
        stream.update(try CanonicalJSON.encode(counts))
        stream.update([0x0A])
        stream.update(try CanonicalJSON.encode(filters))
        return stream.finalize()
    }
}

/// The envelope around the items (export-spec.md 3).
public struct ExportEnvelope: Sendable {
    /// The version this build writes: 2 added the records' human fields (display name and
    /// unit, local day), lateness and the capture windows (docs/export-format.md).
    public static let formatVersion = 2
    /// The versions `verify-export` checks.
    public static let readableVersions = 1...2
    public var exportID: String
    public var kind: ExportKind
    public var createdAt: Double
    public var app: JSONValue
    public var archive: JSONValue
    public var filters: JSONValue
    /// The format written: `formatVersion`, or 1 when an export made before version 2 is
    /// reproduced (integrity checks).
    public var version = ExportEnvelope.formatVersion

    /// What the manifest hash covers of the envelope.
    public var metadata: JSONValue {
        .object(["app": app, "archive": archive, "export_format_version": .int(version), "export_kind": .string(kind.rawValue),
                 "filters": filters, "provenance_warning": .string(ProvenanceWarning.text)])
    }

    /// The first line: every member before `items`, then `"items":[`.
    public func header() throws(HashingError) -> [UInt8] {
        var out: [UInt8] = Array("{\"app\":".utf8)
        out += try CanonicalJSON.encode(app)
        out += Array(",\"archive\":".utf8)
        out += try CanonicalJSON.encode(archive)
        out += Array(",\"created_at\":".utf8) + (try CanonicalJSON.encode(.string(CanonicalDate.string(createdAt))))
        out += Array(",\"export_format_version\":\(version),\"export_id\":".utf8) + (try CanonicalJSON.encode(.string(exportID)))
        out += Array(",\"export_kind\":".utf8) + (try CanonicalJSON.encode(.string(kind.rawValue)))
        out += Array(",\"filters\":".utf8) + (try CanonicalJSON.encode(filters))
        out += Array(",\"items\":[\n".utf8)
        return out
    }

    /// The manifest object.
    public static func manifest(recordCount: Int, counts: JSONValue, manifestHash: String) -> JSONValue {
        .object(["counts": counts, "item_hash_algorithm": .string("sha256"), "manifest_hash": .string(manifestHash),
                 "manifest_hash_algorithm": .string("sha256"), "record_count": .int(recordCount)])
    }

    /// The last line: closes `items`, then the manifest and the provenance warning.
    public static func footer(manifest: JSONValue) throws(HashingError) -> [UInt8] {
        var out: [UInt8] = Array("],\"manifest\":".utf8)
        out += try CanonicalJSON.encode(manifest)
        out += Array(",\"provenance_warning\":".utf8) + (try CanonicalJSON.encode(.string(ProvenanceWarning.text)))
        out += Array("}\n".utf8)
        return out
    }

    /// The envelope without items, for the CSV export's companion manifest file.
    public func standalone(manifest: JSONValue, files: JSONValue) throws(HashingError) -> [UInt8] {
        var o: [String: JSONValue] = [:]
        if case .object(let m) = metadata { o = m }
        o["export_id"] = .string(exportID)
        o["created_at"] = .string(CanonicalDate.string(createdAt))
        o["manifest"] = manifest
        o["files"] = files
        return try CanonicalJSON.encode(.object(o)) + [0x0A]
    }
}
