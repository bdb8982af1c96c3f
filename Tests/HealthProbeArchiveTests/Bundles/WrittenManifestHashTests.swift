import Foundation
import Testing
import HealthProbeArchive
import HealthProbeTestSupport

/// The manifest hash a rebuild takes from a bundle's bytes before the apply verifies them.
@Suite("Written manifest hash")
struct WrittenManifestHashTests {
    struct Entry: Codable { var file: String; var manifestHash: String }
    struct Index: Codable { var bundles: [Entry] }

    static func lines(_ data: Data) -> [[UInt8]] {
        var lines = [UInt8](data).split(separator: 0x0A, omittingEmptySubsequences: false).map(Array.init)
        if lines.last == [] { lines.removeLast() }
        return lines
    }

    @Test("the committed chain's bundles give their manifest hashes from their bytes, and the verifier's; a changed item or trailer gives another; one line gives none")
    func committedChain() throws {
        let dir = vectorURL("bundles/chain")
        let dec = JSONDecoder()
        dec.keyDecodingStrategy = .convertFromSnakeCase
        let index = try dec.decode(Index.self, from: Data(contentsOf: dir.appendingPathComponent("digests.json")))
        #expect(index.bundles.count == 4)
        for e in index.bundles {
            let lines = Self.lines(try Data(contentsOf: dir.appendingPathComponent(e.file)))
            let written = try #require(WrittenManifestHash.compute(lines: lines))
            #expect(written.manifestHash == e.manifestHash, "\(e.file)")
            #expect(written.header == lines[0])
            #expect(try BundleFile.verify(lines: lines, expected: nil).1.manifestHash == e.manifestHash)
            var changed = lines
            changed[1].append(0x20)
            #expect(WrittenManifestHash.compute(lines: changed)?.manifestHash != e.manifestHash)
            changed = lines
            changed[changed.count - 1].append(0x20)
            #expect(WrittenManifestHash.compute(lines: changed)?.manifestHash != e.manifestHash)
        }
        #expect(WrittenManifestHash.compute(lines: [[UInt8]("{}".utf8)]) == nil)
    }
}
