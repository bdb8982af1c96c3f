import Testing
@testable import HealthProbeArchive

/// The rows a format-2 bundle's new_sample items stand for, kept as bits.
@Suite("Covered rows")
struct CoveredRowsTests {
    @Test("ids dense or spread, below the first, negative or at Int64's ends: each is found once added and no other is; a sample is taken once")
    func membership() {
        let rows = CoveredRows()
        let ids: [Int64] = [1_000, 1_001, 1_063, 1_064, 999, 1, 0, -5, 70_000_000, Int64.max, Int64.min, Int64.max - 1, 5_000]
        for (i, id) in ids.enumerated() {
            #expect(rows.insert(sample: id, version: id, event: id, range: id), "\(id)")
            for (j, other) in ids.enumerated() {
                for table in 0..<4 { #expect(rows.contains(table: table, other) == (j <= i), "\(other) after \(id), table \(table)") }
            }
        }
        #expect(!rows.insert(sample: 1_000, version: 7, event: 7, range: 7), "a sample is taken once")
        #expect(!rows.contains(table: 1, 7))
        for id: Int64 in [2, 998, 1_002, 1_065, -4, 69_999_999, Int64.max - 2, Int64.min + 1] {
            #expect(!rows.contains(table: 0, id), "\(id)")
        }
        #expect(!rows.contains(table: 4, 1_000) && !rows.contains(table: -1, 1_000))
        // The first ids at Int64's very ends: kept, found, and no arithmetic past them.
        let ends = CoveredRows()
        for id in [Int64.max - 10, Int64.max - 5, Int64.max, Int64.min, Int64.min + 70, 0] {
            #expect(ends.insert(sample: id, version: id, event: id, range: id), "\(id)")
            #expect(ends.contains(table: 3, id))
        }
        #expect(!ends.contains(table: 0, Int64.max - 6) && !ends.contains(table: 0, Int64.min + 1))
        // An id kept apart, far from the first, stays found once the bits have grown over it.
        let grown = CoveredRows()
        let spread: [Int64] = [0, 1 << 25, (1 << 24) - 100, (1 << 25) - 200, (1 << 25) + 50]
        for id in spread { #expect(grown.insert(sample: id, version: id, event: id, range: id), "\(id)") }
        for id in spread { #expect(grown.contains(table: 2, id), "\(id)") }
        #expect(!grown.insert(sample: 1 << 25, version: 1, event: 1, range: 1), "taken once, wherever it is kept")
    }
}
