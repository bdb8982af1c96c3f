import Foundation
import GRDB
import HealthProbeCanonical

/// Reads an archive's stored columns into a bundle item's typed values for
/// `ObservationBundleBuilder`: a value the archive should never hold (a hash that is
/// not 32 bytes or 64 hex digits, a name no kind has, a NULL where a value belongs)
/// is an error naming its column, never a bundle written around it.
enum StoredColumns {
    static func damaged(_ column: String, _ why: String) -> ArchiveError {
        ArchiveError(.invalidState, "the archive's \(column) \(why); `hp-node verify` checks the archive")
    }

    static func required<T>(_ value: T?, _ column: String) throws -> T {
        guard let value else { throw damaged(column, "is NULL") }
        return value
    }

    static func required<T: DatabaseValueConvertible>(_ r: Row, _ column: String) throws -> T {
        try required(r[column] as T?, column)
    }

    static func text(_ r: Row, _ column: String) -> ItemText? { (r[column] as String?).map(ItemText.init) }

    /// A hash stored as its 64 hex digits (text).
    static func hash(_ r: Row, _ column: String) throws -> Digest32? {
        guard let text: String = r[column] else { return nil }
        guard let d = Digest32(hex: text) else { throw damaged(column, "holds a hash that is not 64 lower-case hex digits") }
        return d
    }

    static func value<E: RawRepresentable>(_ r: Row, _ column: String) throws -> E? where E.RawValue == String {
        guard let name: String = r[column] else { return nil }
        guard let v = E(rawValue: name) else { throw damaged(column, "holds a name no \(E.self) has") }
        return v
    }

    /// A sample reference from a type and a fingerprint given as hex text.
    static func reference(_ r: Row, _ type: String, _ fingerprint: String) throws -> BundleItem.SampleReference {
        BundleItem.SampleReference(strictFingerprint: try required(hash(r, fingerprint), fingerprint), type: try required(text(r, type), type))
    }

    /// A hash stored as its 32 bytes (NULL, and an empty blob, are none).
    static func digest(_ r: FastStatement, _ col: Int32, _ column: String) throws -> Digest32? {
        guard let bytes = r.bytes(col, emptyIsNull: true) else { return nil }
        guard bytes.count == 32 else { throw damaged(column, "holds a hash of \(bytes.count) bytes, not 32") }
        return Digest32(bytes: bytes)
    }

    /// A hash stored as its 64 hex digits (text), read without building a `String`.
    static func hexText(_ r: FastStatement, _ col: Int32, _ column: String) throws -> Digest32? {
        guard let bytes = r.textBytes(col) else { return nil }
        guard let d = Digest32(hexDigits: bytes) else { throw damaged(column, "holds a hash that is not 64 lower-case hex digits") }
        return d
    }

    static func value<E: ItemName>(_ r: FastStatement, _ col: Int32, _ column: String) throws -> E? {
        guard let bytes = r.textBytes(col) else { return nil }
        guard let v = E.item(named: bytes) else { throw damaged(column, "holds a name no \(E.self) has") }
        return v
    }

    /// A sample reference from a type's text and a stored fingerprint's bytes.
    static func reference(_ r: FastStatement, type: Int32, fingerprint: Int32, _ types: inout LastText) throws -> BundleItem.SampleReference {
        BundleItem.SampleReference(strictFingerprint: try required(digest(r, fingerprint, "samples.strict_fingerprint"), "samples.strict_fingerprint"),
                                   type: try required(types.text(r.textBytes(type)), "sample_types.type_identifier"))
    }
}

/// The text a column held in the row before, kept: rows in order mostly repeat
/// their type and unit, so these are copied once per run of equal values.
struct LastText {
    private var last: ItemText?

    mutating func text(_ bytes: UnsafeBufferPointer<UInt8>?) -> ItemText? {
        guard let bytes else { return nil }
        if let last, last.equals(bytes) { return last }
        let text = ItemText(utf8: Array(bytes))
        last = text
        return text
    }
}
