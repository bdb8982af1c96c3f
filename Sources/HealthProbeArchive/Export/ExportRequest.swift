import Foundation

/// The five export kinds of export-spec.md section 2.
public enum ExportKind: String, Sendable, Codable, CaseIterable {
    case observationRecordsJSON = "observation_records_json"
    case observationRecordsCSV = "observation_records_csv"
    case observationDiffJSON = "observation_diff_json"
    case typeSummaryJSON = "type_summary_json"
    case archiveManifestJSON = "archive_manifest_json"
}

/// What to export.
public struct ExportRequest: Sendable {
    public var kind: ExportKind
    /// The observation whose visible state is exported (records, summaries); default the latest.
    public var at: Int64?
    /// Diff bounds.
    public var from: Int64?
    public var to: Int64?
    /// Sample types (empty: all).
    public var types: [String] = []
    /// Start-date window `[dateFrom, dateTo)`.
    public var dateFrom: Double?
    public var dateTo: Double?
    public var includeRelationships = true
    /// Include each record's metadata object (off by default: it may hold personal detail).
    public var includeMetadata = false
    /// Visibility fields (last verified, disappeared) consider observations up to this one;
    /// default the latest. Part of the manifest, so an export can be reproduced exactly.
    public var asOf: Int64?
    /// The format to write: the current one; 1 only to reproduce an export made before
    /// version 2 (integrity checks), which lacks the human fields, lateness and windows.
    var formatVersion = ExportEnvelope.formatVersion

    public init(kind: ExportKind) { self.kind = kind }
}

/// A finished export.
public struct ExportResult: Sendable, Codable, Equatable {
    public var exportID: String
    public var kind: ExportKind
    public var path: String
    public var companionPaths: [String]
    public var recordCount: Int
    public var manifestHash: String
}

/// The warning every export carries and the command shows (export-spec.md 8).
public enum ProvenanceWarning {
    public static let text = "Exported data is observed evidence from HealthKit-accessible surfaces. Re-publishing it to HealthKit may lose original metadata and provenance. HealthProbe does not restore or modify HealthKit data or iOS backups."
}
