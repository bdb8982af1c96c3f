import Foundation
import GRDB
import Testing
@testable import HealthProbeArchive
import HealthProbeTestSupport

@Suite("The chain-state digest's sort under a bounded cache")
struct ChainStateDigestTests {
    @Test("the writer (64 MiB cache, bounded while the digest sorts) and a reader (8 MiB) give the same digest; the writer's cache size is restored")
    func boundedSortSameDigest() throws {
        let t = TempHome()
        try t.simulate(seed: 5, days: [4, 2])
        let node = try t.open()
        for obs in Int64(1)...2 {
            let (written, cacheAfter) = try node.archive.writer.write { db in
                (try ChainStateDigest.compute(db, observationID: obs), try Int.fetchOne(db, sql: "PRAGMA main.cache_size"))
            }
            let read = try node.archive.writer.read { db in try ChainStateDigest.compute(db, observationID: obs) }
            #expect(written == read && written.visibleCount > 0, "observation \(obs)")
            #expect(cacheAfter == -64 * 1024, "the writer's own cache size once the digest is computed")
        }
        #expect(ChainStateDigest.sorterKiB <= 8 * 1024)
    }
}
