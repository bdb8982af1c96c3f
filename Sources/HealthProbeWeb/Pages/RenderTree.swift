import Mustache

/// A page model as dictionaries and arrays, made with one reflection pass over it before
/// rendering. The template engine otherwise reflects a struct again at each tag that names
/// one of its members (and at each tag an inner section leaves to an outer one), listing
/// all the members each time: that was a third of the server's time under load at
/// household scale (`hp-bench web`, 12 chains of 1,000,000 samples), more than SQLite's.
/// Lookups then behave as before: a nil member is absent, so a tag looks further out, as
/// it did when reflection found nil.
enum RenderTree {
    /// The tree of `value` (the value itself when it is nil).
    static func of(_ value: Any) -> Any { convert(value) ?? value }

    /// The tree of `value`; nil for a nil optional.
    static func convert(_ value: Any) -> Any? {
        if value is MustacheParent || value is MustacheCustomRepresentation || value is MustacheLambda { return value }
        let mirror = Mirror(reflecting: value)
        switch mirror.displayStyle {
        case .optional:
            guard let wrapped = mirror.children.first?.value else { return nil }
            return convert(wrapped)
        case .collection where value is any MustacheSequence:
            return mirror.children.map { of($0.value) }
        case .struct where !(value is CustomStringConvertible):
            var members: [String: Any] = [:]
            for child in mirror.children {
                // A nil member is left out: the tag then looks further out, as with reflection.
                if let label = child.label, let member = convert(child.value) { members[label] = member }
            }
            return members
        default:
            return value
        }
    }
}
