import Foundation

/// A closed set a bundle item names by its raw value: its names' UTF-8, listed once
/// (Swift's synthesized `allCases` builds a new array at each call, and a bundle
/// names a kind in every item), for lookups from bytes without building a `String`.
protocol ItemName: RawRepresentable, CaseIterable where RawValue == String {
    /// Every value with its name's UTF-8 (`makeItemNames()`), made once.
    static var itemNames: [(utf8: [UInt8], value: Self)] { get }
}

extension ItemName {
    static func makeItemNames() -> [(utf8: [UInt8], value: Self)] { allCases.map { (Array($0.rawValue.utf8), $0) } }

    /// The value named by `bytes`, or nil.
    static func item(named bytes: some Collection<UInt8>) -> Self? {
        let found = bytes.withContiguousStorageIfAvailable { b in
            itemNames.first { n in n.utf8.count == b.count && n.utf8.withUnsafeBufferPointer { b.isEmpty || memcmp($0.baseAddress!, b.baseAddress!, b.count) == 0 } }
        }
        if let found { return found?.value }
        return itemNames.first { $0.utf8.elementsEqual(bytes) }?.value
    }

    /// The names, for an error message.
    static var itemNameList: String { itemNames.map { String(decoding: $0.utf8, as: UTF8.self) }.joined(separator: ", ") }
}

extension ItemName where Self: StoredCode {
    /// The value stored as `code`, or nil.
    static func item(code: Int64) -> Self? {
        for n in itemNames where n.value.code == code { return n.value }
        return nil
    }
}

extension ObservationStatus: ItemName { static let itemNames = makeItemNames() }
extension TriggerReason: ItemName { static let itemNames = makeItemNames() }
extension ValueKind: ItemName { static let itemNames = makeItemNames() }
extension EventKind: ItemName { static let itemNames = makeItemNames() }
extension EvidenceKind: ItemName { static let itemNames = makeItemNames() }
extension RelationshipKind: ItemName { static let itemNames = makeItemNames() }
extension TypeRunKind: ItemName { static let itemNames = makeItemNames() }
extension TypeRunStatus: ItemName { static let itemNames = makeItemNames() }
extension TypeRunErrorKind: ItemName { static let itemNames = makeItemNames() }
