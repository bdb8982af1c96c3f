import Foundation
import GRDB
import GRDBSQLite

/// The rows a format-2 bundle's `new_sample` items carry (a sample, its version, its
/// appeared event, its opened range), so that the builder's queries for the other kinds
/// leave them out: `hp_bundle_covered(table, id)` in their `WHERE`, registered on the
/// building connection through SQLite's C API (one call a row, no values boxed).
/// Ids are kept as bits from the first one of each table: those of one observation's rows
/// are close together.
final class CoveredRows {
    /// The SQL function's name.
    static let function = "hp_bundle_covered"

    /// One table's ids: a bit each, from `base` on (a lower id moves `base` down), for ids
    /// within `maxSpan` of the others; any farther one (only a damaged archive's rowids are so
    /// spread) in a set, so memory stays bounded by the ids kept.
    private struct Bits {
        static let maxSpan: Int64 = 1 << 24
        var base: Int64 = 0
        var words: [UInt64] = []
        var far: Set<Int64> = []

        /// An id kept as far stays there, though the bits may grow over it later.
        func contains(_ id: Int64) -> Bool {
            if !far.isEmpty, far.contains(id) { return true }
            let i = id &- base
            guard i >= 0, i >> 6 < Int64(words.count) else { return false }
            return words[Int(i >> 6)] & (1 << UInt64(i & 63)) != 0
        }

        /// Adds `id`; false when it was there.
        mutating func insert(_ id: Int64) -> Bool {
            if !far.isEmpty, far.contains(id) { return false }
            // Near Int64's ends the bits' bounds could not be computed: such ids are far.
            guard id > Int64.min + 8 * Self.maxSpan, id < Int64.max - 8 * Self.maxSpan else { return far.insert(id).inserted }
            let low = id & ~63
            if words.isEmpty { base = low }
            let top = base + Int64(words.count) * 64
            // How far outside the bits `id` lies (wrapping: a gap past Int64's range reads negative, and is far).
            let gap: Int64 = id < base ? base &- id : (id >= top ? id &- top : 0)
            guard gap >= 0, gap < Self.maxSpan, top - base + gap <= 4 * Self.maxSpan else { return far.insert(id).inserted }
            if id < base {
                words.insert(contentsOf: repeatElement(0, count: Int((base - low) >> 6)), at: 0)
                base = low
            }
            let i = id - base, w = Int(i >> 6)
            if w >= words.count { words.append(contentsOf: repeatElement(0, count: w - words.count + 1)) }
            let bit: UInt64 = 1 << UInt64(i & 63)
            guard words[w] & bit == 0 else { return false }
            words[w] |= bit
            return true
        }
    }

    /// Samples, versions, events, ranges (the function's first argument: 0 to 3).
    private var tables = [Bits](repeating: Bits(), count: 4)
    private var registered: OpaquePointer?

    /// Records a new sample's rows; false when its sample was recorded already.
    func insert(sample: Int64, version: Int64, event: Int64, range: Int64) -> Bool {
        guard !tables[0].contains(sample) else { return false }
        _ = tables[0].insert(sample)
        _ = tables[1].insert(version)
        _ = tables[2].insert(event)
        _ = tables[3].insert(range)
        return true
    }

    func contains(table: Int, _ id: Int64) -> Bool { tables.indices.contains(table) && tables[table].contains(id) }

    /// Registers `hp_bundle_covered` on `db`'s connection (until `unregister`).
    func register(_ db: Database) throws {
        guard let connection = db.sqliteConnection else { throw ArchiveError(.invalidState, "the database connection is closed") }
        // SQLite holds a reference until the function is removed or the connection closes (`xDestroy`).
        let context = Unmanaged.passRetained(self).toOpaque()
        let code = sqlite3_create_function_v2(connection, Self.function, 2, SQLITE_UTF8, context, { ctx, argc, argv in
            guard let ctx, argc == 2, let argv, let me = sqlite3_user_data(ctx) else { return }
            let rows = Unmanaged<CoveredRows>.fromOpaque(me).takeUnretainedValue()
            let table = Int(sqlite3_value_int64(argv[0])), id = sqlite3_value_int64(argv[1])
            sqlite3_result_int(ctx, rows.contains(table: table, id) ? 1 : 0)
        }, nil, nil, { me in
            if let me { Unmanaged<CoveredRows>.fromOpaque(me).release() }
        })
        // On failure SQLite has already called xDestroy, which released the reference.
        guard code == SQLITE_OK else { throw ArchiveError(.invalidState, "SQLite refused the function \(Self.function) (\(code))") }
        registered = connection
    }

    /// Removes the function again (the builder's connection is a pool's, used by others after).
    /// Should SQLite refuse (a statement still running), the function stays until the connection
    /// closes: it holds its own reference, so nothing dangles, and it is registered anew next time.
    func unregister(_ db: Database) {
        guard let connection = registered else { return }
        sqlite3_create_function_v2(connection, Self.function, 2, SQLITE_UTF8, nil, nil, nil, nil, nil)
        registered = nil
    }
}
