import Foundation
import Testing
@testable import HealthProbeArchive
@testable import HealthProbeSimulator
@testable import HealthProbeNode
import HealthProbeProtocol
import HealthProbeTestSupport

@Suite("The node's outbox: bundles built into deflated parts")
struct OutboxBundleTests {
    func node() throws -> (TempHome, NodeArchive) {
        let t = TempHome()
        try t.simulate(seed: 11, days: [3])
        return (t, try t.open())
    }

    func inflated(_ path: String, _ parts: [OutboxBundle.Part]) throws -> [[UInt8]] {
        let handle = try #require(FileHandle(forReadingAtPath: path))
        defer { try? handle.close() }
        var buffer: [UInt8] = []
        return try parts.map { p in
            try OutboxBundle.read(p, fd: handle.fileDescriptor, into: &buffer)
            return try BundlePartCodec.inflate(buffer, declaredSize: p.size)
        }
    }

    @Test("the inflated parts are the bundle's lines byte for byte, whole lines within the part size; the re-hash passes")
    func partsAreTheLines() throws {
        let (t, node) = try node()
        let (lines, hash) = try bundleLines(node, 1, previous: nil)
        let expected: [UInt8] = lines.reduce(into: []) { $0 += $1; $0.append(0x0A) }
        for partSize in [BundlePartCodec.maxPartSize, 4096] {
            let path = t.root + "/outbox-\(partSize).parts"
            let w = try node.archive.writer.read { db in try OutboxBundle.write(db, observationID: 1, previousManifestHash: nil, to: path, partSize: partSize) }
            #expect(w.manifestHash == hash && w.size == expected.count)
            if partSize == 4096 { #expect(w.parts.count > 10, "a small part size splits the bundle") } else { #expect(w.parts.count == 1) }
            let data = try inflated(path, w.parts)
            #expect(data.reduce(into: [UInt8]()) { $0 += $1 } == expected)
            for (p, d) in zip(w.parts, data) {
                #expect(d.count == p.size && d.count <= partSize && d.last == 0x0A)
            }
            // Stored back to back.
            #expect(w.parts.first?.offset == 0)
            for (a, b) in zip(w.parts, w.parts.dropFirst()) { #expect(b.offset == a.offset + a.compressedSize) }
            let fileSize = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
            #expect(fileSize == w.parts.map(\.compressedSize).reduce(0, +))
            try OutboxBundle.rehash(path, parts: w.parts, expected: hash)
        }
    }

    @Test("a stored part changed after it was built fails the re-hash (zlib or manifest hash), and a wrong expected hash is named")
    func tamperedPartsFail() throws {
        let (t, node) = try node()
        let path = t.root + "/outbox.parts"
        let w = try node.archive.writer.read { db in try OutboxBundle.write(db, observationID: 1, previousManifestHash: nil, to: path, partSize: 4096) }
        #expect(throws: BundleError.self) { try OutboxBundle.rehash(path, parts: w.parts, expected: String(repeating: "0", count: 64)) }
        // Swap two stored parts' bytes: each inflates, but the lines are out of order.
        var swapped = w.parts
        swapped.swapAt(1, 2)
        swapped[1].size = w.parts[1].size; swapped[2].size = w.parts[2].size
        #expect(throws: (any Error).self) { try OutboxBundle.rehash(path, parts: swapped, expected: w.manifestHash) }
        // Flip one byte in the middle of a part.
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let at = w.parts[3].offset + w.parts[3].compressedSize / 2
        bytes[at] ^= 0x40
        try bytes.write(to: URL(fileURLWithPath: path))
        #expect(throws: (any Error).self) { try OutboxBundle.rehash(path, parts: w.parts, expected: w.manifestHash) }
    }

    @Test("a full disk fails the build with a clear error (the deflating thread's write error reaches the builder)",
          .enabled(if: FileManager.default.fileExists(atPath: "/dev/full"), "needs /dev/full"))
    func fullDisk() throws {
        let (_, node) = try node()
        #expect {
            _ = try node.archive.writer.read { db in try OutboxBundle.write(db, observationID: 1, previousManifestHash: nil, to: "/dev/full", partSize: 4096) }
        } throws: { error in
            guard let e = error as? SyncProtocolError else { return false }
            return e.code == .storage && e.message.contains("disk full")
        }
    }

    @Test("a line longer than the part size is refused before anything is sent")
    func lineOverPartSize() throws {
        let (t, node) = try node()
        #expect {
            _ = try node.archive.writer.read { db in try OutboxBundle.write(db, observationID: 1, previousManifestHash: nil, to: t.root + "/x.parts", partSize: 64) }
        } throws: { ($0 as? SyncProtocolError)?.code == .frameTooLarge }
    }
}
