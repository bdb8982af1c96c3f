/// A closed kind the archive stores as a small integer code and names by its raw value
/// everywhere else: bundles, exports, the CLI, JSON (schema 15,
/// docs/decisions/2026-11-27-event-kind-codes.md). SQLite stores the codes 0 and 1 in no
/// bytes at all beyond the record header, and any code in one byte.
public protocol StoredCode: RawRepresentable, CaseIterable where RawValue == String {
    /// The stored code, fixed once shipped.
    var code: Int64 { get }
}

extension StoredCode {
    /// The code as an SQL literal, for queries that name a kind.
    public var sql: String { String(code) }

    /// SQL naming the kind stored in `column` (NULL for NULL, and for a code no kind has).
    public static func nameSQL(_ column: String) -> String {
        "CASE \(column)" + allCases.map { " WHEN \($0.code) THEN '\($0.rawValue)'" }.joined() + " END"
    }

}
