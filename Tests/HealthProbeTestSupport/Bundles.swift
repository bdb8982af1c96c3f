import Foundation
import GRDB
@testable import HealthProbeArchive
import HealthProbeCanonical

/// Builds the bundle of `obs` as lines (header, items, trailer) and its manifest hash.
public func bundleLines(_ node: NodeArchive, _ obs: Int64, previous: String?, format: Int? = nil) throws -> ([[UInt8]], String) {
    try bundleLines(node.archive, obs, previous: previous, format: format)
}

/// The same, from any archive (a replica's bundles built again).
public func bundleLines(_ archive: Archive, _ obs: Int64, previous: String?, format: Int? = nil) throws -> ([[UInt8]], String) {
    try archive.writer.read { db in
        var lines: [[UInt8]] = []
        let (header, trailer, hash) = try ObservationBundleBuilder.build(db, observationID: obs, previousManifestHash: previous, format: format) { _, bytes, _ in
            lines.append(bytes)
        }
        return ([try CanonicalJSON.encode(header.json)] + lines + [try CanonicalJSON.encode(trailer.json)], hash)
    }
}

/// A home with fixed keys, so bundles are reproducible byte for byte.
public func fixedKeyHome() throws -> TempHome {
    let t = TempHome()
    try FileManager.default.createDirectory(atPath: t.root + "/keys", withIntermediateDirectories: true)
    try (String(repeating: "0f", count: 32) + "\n").write(toFile: t.root + "/keys/archive-secret", atomically: true, encoding: .utf8)
    try (String(repeating: "a5", count: 32) + "\n").write(toFile: t.root + "/keys/device-chain-seed", atomically: true, encoding: .utf8)
    return t
}

/// A bundle made again from a header and items given as bytes (each canonical or
/// not, as a test wants): item hashes, trailer counts and manifest hash all
/// recomputed, so that only the content differs from a valid bundle.
public func rebundle(header: [UInt8], items: [[UInt8]]) throws -> ([[UInt8]], String) {
    try rebundle(header: header, items: items, kinds: items.map { item in
        if case .object(let o)? = try? JSONParser.parse(item), case .string(let k)? = o["kind"] { return k }
        return "?"
    })
}

/// `rebundle` with each item's kind given (`?` for none), so that no item is parsed again.
func rebundle(header: [UInt8], items: [[UInt8]], kinds: [String]) throws -> ([[UInt8]], String) {
    precondition(items.count == kinds.count, "one kind per item")
    var counts: [String: Int] = [:]
    var manifest = header + [0x0A]
    for (item, kind) in zip(items, kinds) {
        counts[kind, default: 0] += 1
        manifest += Array(ArchiveHasher.sha256(.item, item).utf8) + [0x0A]
    }
    let trailer = try CanonicalJSON.encode(.object(["item_count": .int(items.count), "counts": .object(counts.mapValues { .int($0) })]))
    manifest += trailer
    return ([header] + items + [trailer], ArchiveHasher.sha256(.manifest, manifest))
}

/// The bundle's lines with items changed: `edit` gets each item as a JSON object
/// (with its line index, 1 = the first item) and returns what replaces it: itself
/// changed, nothing (dropped), or more than one item. Item hashes, counts and the
/// manifest hash are recomputed, and a changed version's `payload_hash` too when
/// `rehashPayload` is set. An item `edit` returns as it was keeps its bytes.
public func editedBundle(_ lines: [[UInt8]], rehashPayload: Bool = true,
                         _ edit: (Int, [String: JSONValue]) throws -> [[String: JSONValue]]) throws -> ([[UInt8]], String) {
    var items: [[UInt8]] = [], kinds: [String] = []
    func kind(_ o: [String: JSONValue]) -> String { if case .string(let k)? = o["kind"] { k } else { "?" } }
    for (i, line) in lines.enumerated().dropFirst().dropLast() {
        guard case .object(let o) = try JSONParser.parse(line) else { continue }
        let edited = try edit(i, o)
        if edited.count == 1, edited[0] == o {
            items.append(line); kinds.append(kind(o))
            continue
        }
        for var changed in edited {
            if rehashPayload, changed != o, let p = changed["payload"], changed["kind"] == .string("version") {
                changed["payload_hash"] = .string(try ArchiveHasher.sha256(.payload, json: p))
            }
            items.append(try CanonicalJSON.encode(.object(changed))); kinds.append(kind(changed))
        }
    }
    return try rebundle(header: lines[0], items: items, kinds: kinds)
}

/// A new replica archive, `replica.sqlite` in `dir`, ready for bundles to be applied to it
/// as a server opens each chain's replica (`prepareForApplies`).
public func newReplica(in dir: TempDir) throws -> Archive {
    let replica = try Archive.open(path: dir.file("replica.sqlite"))
    try replica.prepareForApplies()
    return replica
}
