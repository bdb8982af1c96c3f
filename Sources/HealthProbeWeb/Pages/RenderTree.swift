import Mustache

/// A page model made ready for the template engine, which otherwise reflects a struct again
/// at each tag that names one of its members (and at each tag an inner section leaves to an
/// outer one), listing all the members each time: that was a third of the server's time
/// under load at household scale (`hp-bench web`, 12 chains of 1,000,000 samples), more
/// than SQLite's. Here a struct is listed once, when a tag first names one of its members,
/// and only the parts a template reaches are ever listed (a chart's thousand days, drawn
/// already, are not). Lookups behave as before: a nil member is absent, so a tag looks
/// further out, as it did when reflection found nil.
enum RenderTree {
    /// The tree of `value` (the value itself when it is nil).
    static func of(_ value: Any) -> Any { wrap(value) ?? value }

    /// The tree of `value`; nil for a nil optional.
    static func wrap(_ value: Any) -> Any? {
        // `as?` unwraps an optional: a member `String?` holding text comes out as the text.
        if let v = value as? String { return v }
        if let v = value as? Bool { return v }
        if let v = value as? Int { return v }
        if let v = value as? Int64 { return v }
        if let v = value as? Double { return v }
        if value is MustacheParent || value is MustacheCustomRepresentation || value is MustacheCustomRenderable || value is MustacheLambda { return value }
        let mirror = Mirror(reflecting: value)
        if mirror.displayStyle == .optional {
            guard let wrapped = mirror.children.first?.value else { return nil }
            return wrap(wrapped)
        }
        // Arrays are listed element by element; other sequences (a set, a reversed array) and
        // anything shown by its description are left to the engine, as they were.
        if value is [Any] { return Elements(children: mirror.children) }
        if value is any MustacheSequence || value is CustomStringConvertible || value is CustomDebugStringConvertible
            || value is TextOutputStreamable { return value }
        return mirror.displayStyle == .struct ? Node(mirror) : value
    }

    /// A struct whose members are listed once, at the first lookup.
    final class Node: MustacheParent {
        private let mirror: Mirror
        private var members: [String: Any]?

        init(_ mirror: Mirror) { self.mirror = mirror }

        func child(named name: String) -> Any? {
            if let members { return members[name] }
            var made: [String: Any] = [:]
            for child in mirror.children {
                // A nil member is left out: the tag then looks further out, as with reflection.
                if let label = child.label, let member = RenderTree.wrap(child.value) { made[label] = member }
            }
            members = made
            return made[name]
        }
    }

    /// An array's elements, each made ready as it is rendered. The engine's transforms on a
    /// list (`count`, `empty`, `first`...) are the array's own.
    struct Elements: MustacheSequence, MustacheTransformable {
        let children: Mirror.Children
        func makeIterator() -> LazyMapSequence<Mirror.Children, Any>.Iterator {
            children.lazy.map { RenderTree.of($0.value) }.makeIterator()
        }

        func transform(_ name: String) -> Any? { Array(self).transform(name) }
    }
}
