import Foundation
import GRDB
import GRDBSQLite
import HealthProbeCanonical

/// Binds and steps a GRDB-prepared statement through the SQLite C API, for
/// the capture write path's hot loops. Use only inside a database access
/// closure; always `reset()` after use (the methods do).
struct FastStatement {
    let statement: Statement
    private var raw: OpaquePointer { statement.sqliteStatement }
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    init(_ db: Database, _ sql: String) throws {
        statement = try db.cachedStatement(sql: sql)
    }

    enum Value {
        case int(Int64?)
        case double(Double?)
        case text(String?)
        case blob([UInt8]?)
        /// A hash given as 64 lower-case hex digits, bound as its 32 stored bytes
        /// (`StoredHash`); anything else binds as text, which matches no stored hash.
        case hash(String?)
        /// A hash held inline, bound as its 32 bytes.
        case digest(Digest32?)
        /// Text given as its UTF-8 bytes (a bundle item's `ItemText`).
        case utf8(ArraySlice<UInt8>?)
        /// A hash held inline, bound as its 64 lower-case hex digits (a column that stores hashes as text).
        case hexText(Digest32?)
    }

    func bind(_ values: [Value]) {
        sqlite3_reset(raw)
        sqlite3_clear_bindings(raw)
        for (i, v) in values.enumerated() {
            let idx = Int32(i + 1)
            switch v {
            case .int(let x): if let x { sqlite3_bind_int64(raw, idx, x) } else { sqlite3_bind_null(raw, idx) }
            case .double(let x): if let x { sqlite3_bind_double(raw, idx, x) } else { sqlite3_bind_null(raw, idx) }
            case .text(let x):
                if let x {
                    var s = x
                    s.withUTF8 { buf in
                        _ = sqlite3_bind_text(raw, idx, UnsafeRawPointer(buf.baseAddress!).assumingMemoryBound(to: CChar.self), Int32(buf.count), Self.transient)
                    }
                } else { sqlite3_bind_null(raw, idx) }
            case .blob(let x):
                if let x {
                    x.withUnsafeBytes { buf in _ = sqlite3_bind_blob(raw, idx, buf.baseAddress, Int32(buf.count), Self.transient) }
                } else { sqlite3_bind_null(raw, idx) }
            case .hash(let x):
                if var x {
                    x.withUTF8 { bindHash(idx, $0) }
                } else { sqlite3_bind_null(raw, idx) }
            case .digest(let d):
                if let d {
                    d.withUnsafeBytes { _ = sqlite3_bind_blob(raw, idx, $0.baseAddress, 32, Self.transient) }
                } else { sqlite3_bind_null(raw, idx) }
            case .utf8(let x):
                if let x {
                    x.withUnsafeBufferPointer { buf in
                        if let base = buf.baseAddress {
                            _ = sqlite3_bind_text(raw, idx, UnsafeRawPointer(base).assumingMemoryBound(to: CChar.self), Int32(buf.count), Self.transient)
                        } else {
                            _ = sqlite3_bind_text(raw, idx, "", 0, Self.transient)  // empty text, not NULL
                        }
                    }
                } else { sqlite3_bind_null(raw, idx) }
            case .hexText(let d):
                if let d {
                    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 64) { out in
                        d.writeHex(to: out.baseAddress!)
                        _ = sqlite3_bind_text(raw, idx, UnsafeRawPointer(out.baseAddress!).assumingMemoryBound(to: CChar.self), 64, Self.transient)
                    }
                } else { sqlite3_bind_null(raw, idx) }
            }
        }
    }

    /// Binds hex digits as a 32-byte blob, or as text when they are not a hash.
    private func bindHash(_ idx: Int32, _ hex: UnsafeBufferPointer<UInt8>) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { out in
            if StoredHash.decode(hex, into: out.baseAddress!) {
                _ = sqlite3_bind_blob(raw, idx, out.baseAddress, 32, Self.transient)
            } else {
                _ = sqlite3_bind_text(raw, idx, UnsafeRawPointer(hex.baseAddress!).assumingMemoryBound(to: CChar.self), Int32(hex.count), Self.transient)
            }
        }
    }

    /// Executes a write; returns the number of changed rows.
    @discardableResult
    func run(_ db: Database, _ values: [Value]) throws -> Int {
        bind(values)
        defer { sqlite3_reset(raw) }
        let rc = sqlite3_step(raw)
        guard rc == SQLITE_DONE || rc == SQLITE_ROW else { throw error(db, rc) }
        return Int(sqlite3_changes(db.sqliteConnection))
    }

    /// Runs a query and calls `row` for each result row (columns read with `int`, `text`...).
    func query(_ db: Database, _ values: [Value], _ row: (FastStatement) throws -> Void) throws {
        try queryWhile(db, values) { try row($0); return true }
    }

    /// Like `query`, but stops stepping as soon as `row` returns false.
    func queryWhile(_ db: Database, _ values: [Value], _ row: (FastStatement) throws -> Bool) throws {
        bind(values)
        defer { sqlite3_reset(raw) }
        while true {
            let rc = sqlite3_step(raw)
            if rc == SQLITE_DONE { return }
            guard rc == SQLITE_ROW else { throw error(db, rc) }
            if try !row(self) { return }
        }
    }

    /// Steps a statement bound with `bind`: true while it has a row. The caller
    /// resets it (`reset()`) once done, as for two statements stepped side by side.
    func step(_ db: Database) throws -> Bool {
        let rc = sqlite3_step(raw)
        if rc == SQLITE_ROW { return true }
        guard rc == SQLITE_DONE else { throw error(db, rc) }
        return false
    }

    func reset() { sqlite3_reset(raw) }

    func isNull(_ col: Int32) -> Bool { sqlite3_column_type(raw, col) == SQLITE_NULL }
    func int(_ col: Int32) -> Int64? { isNull(col) ? nil : sqlite3_column_int64(raw, col) }
    func double(_ col: Int32) -> Double? { isNull(col) ? nil : sqlite3_column_double(raw, col) }
    func text(_ col: Int32) -> String? {
        guard let p = sqlite3_column_text(raw, col) else { return nil }
        return String(cString: p)
    }
    /// A text column's UTF-8 bytes (nil for NULL), valid until the statement
    /// steps again: read without building a `String`.
    func textBytes(_ col: Int32) -> UnsafeBufferPointer<UInt8>? {
        guard let p = sqlite3_column_text(raw, col) else { return nil }
        return UnsafeBufferPointer(start: p, count: Int(sqlite3_column_bytes(raw, col)))
    }
    /// A column's bytes as SQLite's `hex()` reads them (a blob's, or a text's UTF-8),
    /// valid until the statement steps again; nil for NULL, and for an empty value when
    /// `emptyIsNull` (as `nullif(hex(x), '')`).
    func bytes(_ col: Int32, emptyIsNull: Bool = false) -> UnsafeRawBufferPointer? {
        guard !isNull(col) else { return nil }
        let p = sqlite3_column_blob(raw, col)  // before its length, as SQLite asks
        let n = Int(sqlite3_column_bytes(raw, col))
        guard n > 0, let p else { return emptyIsNull ? nil : UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(start: p, count: n)
    }

    /// A stored hash column as 64 lower-case hex digits (nil for NULL or a value that is not a 32-byte blob).
    func hash(_ col: Int32) -> String? {
        guard sqlite3_column_type(raw, col) == SQLITE_BLOB, let p = sqlite3_column_blob(raw, col),
              sqlite3_column_bytes(raw, col) == 32 else { return nil }
        return ArchiveHasher.hex(buffer: UnsafeRawBufferPointer(start: p, count: 32))
    }

    /// Whether a stored hash column holds `digest`.
    func hashEquals(_ col: Int32, _ digest: Digest32) -> Bool {
        guard sqlite3_column_type(raw, col) == SQLITE_BLOB, let p = sqlite3_column_blob(raw, col),
              sqlite3_column_bytes(raw, col) == 32 else { return false }
        return digest.withUnsafeBytes { memcmp($0.baseAddress!, p, 32) == 0 }
    }

    /// Compares a text column with `s` without allocating.
    func textEquals(_ col: Int32, _ s: String) -> Bool {
        guard let p = sqlite3_column_text(raw, col) else { return false }
        let n = Int(sqlite3_column_bytes(raw, col))
        var s = s
        return s.withUTF8 { buf in buf.count == n && memcmp(buf.baseAddress!, p, n) == 0 }
    }

    /// Compares a text column with bytes `range` of `bytes` without allocating.
    func textEquals(_ col: Int32, _ bytes: [UInt8], _ range: Range<Int>) -> Bool {
        guard let p = sqlite3_column_text(raw, col) else { return false }
        let n = Int(sqlite3_column_bytes(raw, col))
        return n == range.count && bytes.withUnsafeBufferPointer { memcmp($0.baseAddress! + range.lowerBound, p, n) == 0 }
    }

    /// Whether the first row passes `matches` (false without a row): a guessed row checked.
    func firstRowMatches(_ db: Database, _ values: [Value], _ matches: (FastStatement) -> Bool) throws -> Bool {
        var hit = false
        try queryWhile(db, values) { row in hit = matches(row); return false }
        return hit
    }

    /// The first column of the first row as an integer (nil without a row).
    func firstInt(_ db: Database, _ values: [Value]) throws -> Int64? {
        var id: Int64?
        try queryWhile(db, values) { row in id = row.int(0); return false }
        return id
    }

    private func error(_ db: Database, _ rc: Int32) -> DatabaseError {
        let message = String(cString: sqlite3_errmsg(db.sqliteConnection))
        return DatabaseError(resultCode: ResultCode(rawValue: rc), message: message, sql: statement.sql)
    }
}
