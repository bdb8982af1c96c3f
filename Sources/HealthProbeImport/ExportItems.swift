import HealthProbeArchive

/// One sample read from the export, with where it was.
struct ImportedSample: Sendable {
    var typeIdentifier: String
    var sample: CapturedSample
    var line: Int
    /// Members and routes this sample is the parent of.
    var children: [ImportedChild] = []
}

/// A related sample: a correlation member or a workout route.
struct ImportedChild: Sendable {
    typealias Kind = RelationshipKind
    var kind: Kind
    var typeIdentifier: String
    var sample: CapturedSample
    /// Routes are also top-level samples of their own type; correlation
    /// members normally appear at top level too and are written only if not.
    var alsoEmitted: Bool
}

/// A malformed element: skipped, counted, reported. No values.
public struct Rejection: Sendable, Codable, Equatable {
    public var line: Int
    public var column: Int
    public var element: String
    public var typeIdentifier: String?
    public var reason: String
}
