import Foundation
import GRDB
import HealthProbeArchive

/// Builds the bundle of `obs` as lines (header, items, trailer) and its manifest hash.
public func bundleLines(_ node: NodeArchive, _ obs: Int64, previous: String?) throws -> ([[UInt8]], String) {
    try node.archive.writer.read { db in
        var lines: [[UInt8]] = []
        let (header, trailer, hash) = try ObservationBundleBuilder.build(db, observationID: obs, previousManifestHash: previous) { _, bytes, _ in
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
