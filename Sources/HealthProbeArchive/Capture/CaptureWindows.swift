import GRDB
import HealthProbeCanonical

/// One type's capture window in an observation: the push's window (period,
/// aggregation, closed or open bounds, declared or inferred) and how late the
/// type's records first seen in that observation arrived.
public struct TypeCaptureWindow: Sendable, Equatable {
    public var typeIdentifier: String
    public var window: CaptureWindowNote
    /// The largest first-seen time minus a sample's end among the type's samples first
    /// seen in the observation (seconds, at least 0); nil when none was new.
    public var maxLatenessSeconds: Double?

    /// The window as exports carry it (docs/export-format.md, version 2).
    public var json: JSONValue {
        let bounds = window.closed ?? window.open
        return .object([
            "sample_type_identifier": .string(typeIdentifier), "display_name": .string(TypeCatalogue.info(typeIdentifier).name),
            "period": .string(window.period), "period_declared": .bool(window.periodDeclared),
            "aggregation": .string(window.aggregation), "aggregation_declared": .bool(window.aggregationDeclared),
            "from": bounds.map { .string(CanonicalDate.string($0.lowerBound)) } ?? .null,
            "to": bounds.map { .string(CanonicalDate.string($0.upperBound)) } ?? .null,
            "closed": .bool(window.closed != nil), "max_lateness_seconds": .optional(maxLatenessSeconds),
        ])
    }
}

/// Capture windows as the archive keeps them: in the observation's notes (which travel in
/// bundles, so replicas have them too), applying to every type run of the observation.
public enum CaptureWindows {
    /// Observation `observationID`'s window per type run, by type identifier; empty when the
    /// observation is not a capture with a window (an import, a simulator run).
    public static func byType(_ db: Database, observationID: Int64) throws -> [TypeCaptureWindow] {
        guard let note = CaptureWindowNote.parse(try ObservationQueries.notes(db, id: observationID)) else { return [] }
        let late = try ObservationLateness.byType(db, observationID: observationID)
        let types = try String.fetchAll(db, sql: """
            SELECT st.type_identifier FROM observation_type_runs t JOIN sample_types st ON st.id = t.sample_type_id
            WHERE t.observation_id = ? ORDER BY st.type_identifier
            """, arguments: [observationID])
        return types.sorted(by: CanonicalJSON.keyPrecedes).map { TypeCaptureWindow(typeIdentifier: $0, window: note, maxLatenessSeconds: late[$0]) }
    }

    /// The `capture` section of an export for observation `observationID`: null when it is
    /// not a capture with a window, else its source, unrecognised count and windows per type.
    public static func exportJSON(_ db: Database, observationID: Int64) throws -> JSONValue {
        guard let note = CaptureWindowNote.parse(try ObservationQueries.notes(db, id: observationID)) else { return .null }
        return .object([
            "source": .string(CaptureWindowNote.prefix), "observation_id": .int(Int(observationID)),
            "unrecognised": .int(note.unrecognised),
            "windows": .array(try byType(db, observationID: observationID).map(\.json)),
        ])
    }

    /// The observations that are captures with a window (whose samples' lateness is known).
    public static func captureObservations(_ db: Database) throws -> Set<Int64> {
        var out: Set<Int64> = []
        let rows = try Row.fetchCursor(db, sql: "SELECT id, notes FROM observations WHERE notes LIKE ?", arguments: [CaptureWindowNote.prefix + " %"])
        while let r = try rows.next() {
            if CaptureWindowNote.parse(r[1]) != nil { out.insert(r[0]) }
        }
        return out
    }
}

extension Archive {
    /// `CaptureWindows.byType` of observation `id` (works on replicas too).
    public func captureWindows(observation id: Int64) async throws -> [TypeCaptureWindow] {
        try await writer.read { db in try CaptureWindows.byType(db, observationID: id) }
    }
}
