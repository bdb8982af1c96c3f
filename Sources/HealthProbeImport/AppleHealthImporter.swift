import Foundation
import GRDB
import HealthProbeArchive
import HealthProbeCanonical
import Logging

/// Imports an Apple Health export as one observation: every sample type is a
/// full-scan type run. Streaming: memory is bounded by the page buffers, not
/// the file. A malformed element is skipped, reported with its line and
/// column, and makes its type's run (and the observation) `needs_review`,
/// closing nothing for that type. A corrupt zip, a malformed document or a
/// storage failure reverts the whole observation: the archive's visible state
/// is exactly as before, and the attempt is recorded as a failed observation.
public final class AppleHealthImporter {
    public struct Options: Sendable {
        /// Samples per chunk handed to the write pipeline.
        public var pageSize = 5000
        /// Samples one write transaction may hold (chunks already waiting are applied together).
        public var transactionSamples = PipelinedPageWriter.defaultTransactionSamples
        /// Samples buffered across all types before the largest buffer is flushed.
        public var maxBuffered = 20_000
        /// At most this many rejections are kept for the report (all are counted).
        public var maxReportedRejections = 200
        /// Into an archive with no sample yet, the sample tables' lookup indexes are built
        /// once the records are in, from a sort, instead of row by row
        /// (docs/decisions/2026-11-25-bulk-first-import.md).
        public var deferIndexesOnFirstImport = true
        /// Bounds on what a zip may inflate, counted on the bytes actually inflated
        /// (a member past its declared size is refused whatever these are).
        public var zipLimits = ZipLimits()
        public init() {}
    }

    public struct Result: Sendable, Codable {
        public var observationId: Int64
        public var status: String
        public var source: String
        public var records: Int
        public var types: Int
        public var appeared: Int
        public var changed: Int
        public var disappeared: Int
        public var unchanged: Int
        public var relationships: Int
        public var rejected: Int
        public var rejections: [Rejection]
        public var controlCharactersReplaced: Int
        public var bytes: Int64
        public var seconds: Double
        /// True when nothing appeared, changed or disappeared.
        public var noChanges: Bool { appeared == 0 && changed == 0 && disappeared == 0 }
    }

    let node: NodeArchive
    let options: Options
    let logger: Logger
    /// Progress: (bytes read, total bytes if known, records so far).
    public var onProgress: ((Int64, Int64?, Int) -> Void)?

    public init(node: NodeArchive, options: Options = Options(), logger: Logger = Archive.silentLogger) {
        self.node = node
        self.options = options
        self.logger = logger
    }

    /// Imports the export at `path` (export.zip, export.xml or the unzipped folder).
    public func importExport(at path: String) throws -> Result {
        let meter = InflateMeter(options.zipLimits)
        let location = try ExportLocation.locate(path, meter: meter)
        return try importExport(location, meter: meter)
    }

    /// One type's run and the samples waiting for its next page.
    private final class Pending {
        let type: String
        let run: TypeRunWriter
        var samples: [CapturedSample] = []
        /// Capacity reserved for `samples` up front (counted in `State.reserved`).
        var reserved = 0
        /// Samples in the page last handed over: the next page's buffer is reserved at that size.
        var lastPage = 0
        /// Units of its records (the notes' display units), and the last one inserted.
        var units: Set<String> = []
        var lastUnit: String?

        init(type: String, run: TypeRunWriter) {
            self.type = type
            self.run = run
        }
    }

    private final class State {
        var runs: [String: TypeRunWriter] = [:]
        var pending: [String: Pending] = [:]
        /// The type of the previous record: records come in runs of one type.
        var last: Pending?
        var buffered = 0
        /// Capacity reserved in page buffers, in samples: at most twice `Options.maxBuffered`,
        /// so memory stays bounded however many types interleave.
        var reserved = 0
        var records = 0
        var rejected = 0
        var rejectedByType: [String: Int] = [:]
        var rejectedUnknownType = 0
        var rejections: [Rejection] = []
        var pendingRelations: [(ImportedSample, ImportedChild)] = []
        var exportDate: Double?
        var exportOffset: Int?
        var locale: String?
        var me: [String: String] = [:]
    }

    func importExport(_ location: ExportLocation, meter: InflateMeter? = nil) throws -> Result {
        let started = Date()
        let session = try CaptureSession.begin(node, context: ObservationContext(triggerReason: .`import`, notes: "importing an Apple Health export"),
                                               deferIndexes: options.deferIndexesOnFirstImport)
        let state = State()
        let pipeline = PipelinedPageWriter(session: session, transactionSamples: options.transactionSamples)
        let source: ByteSource
        do { source = try location.open(meter: meter ?? InflateMeter(options.zipLimits)) } catch {
            try? session.revert(reason: "import failed before reading: \(error)")
            throw error
        }
        defer { source.close() }
        let stream = SanitizingStream(source: source)
        let total = source.totalBytes
        stream.onProgress = { [weak self] bytes in self?.onProgress?(bytes, total, state.records) }
        try prepareRelationTable()

        let delegate = ExportParser()
        let parser = ExportXMLStream(handler: delegate)
        delegate.stream = parser
        delegate.onLocale = { state.locale = $0 }
        delegate.onExportDate = { t, offset in state.exportDate = t; state.exportOffset = offset }
        delegate.onMe = { state.me = $0 }
        delegate.onRejection = { r in
            state.rejected += 1
            if let t = r.typeIdentifier { state.rejectedByType[t, default: 0] += 1 } else { state.rejectedUnknownType += 1 }
            if state.rejections.count < self.options.maxReportedRejections { state.rejections.append(r) }
            self.logger.warning("rejected a malformed element", metadata: ["import.line": "\(r.line)", "import.column": "\(r.column)", "import.element": "\(r.element)", "import.reason": "\(r.reason)"])
        }
        delegate.onSample = { item in
            try self.accept(item, state: state, session: session, pipeline: pipeline)
        }

        do {
            let ok = parser.parse { stream.read($0, maxLength: $1) }
            if let e = delegate.callbackError { throw e }
            if let e = stream.error { throw e }
            if !delegate.sawHealthData {
                throw ImportError(.notAnExport, "\(location.displayName) has no <HealthData> element; it is not an Apple Health export")
            }
            if let e = delegate.firstXMLError {
                throw ImportError(.malformedXML, "\(location.displayName) is not well-formed XML at line \(e.line), column \(e.column) (XML error \(e.code)); nothing was imported")
            }
            if !ok || !delegate.sawEnd {
                throw ImportError(.malformedXML, "\(location.displayName) ends before </HealthData> (line \(parser.line)): the file is truncated; nothing was imported")
            }
            // Flush what is buffered, then members of correlations not present at top level.
            try flushAll(state: state, pipeline: pipeline)
            try pipeline.flush()
            try writeMissingMembers(state: state, session: session, pipeline: pipeline)
            try pipeline.flush()
            // Every record is written: the runs' completions and the edit matching read through the indexes.
            try session.buildDeferredIndexes()
            // The export's UTC offset is the observation's before any run completes: each
            // completion computes its type's daily aggregates in the observation's local days.
            try session.updateContext(timeZoneSecondsFromGMT: state.exportOffset, notes: nil)
            // Rejections of unknown type: no run may close anything.
            var results: [TypeRunResult] = []
            for (type, run) in state.runs.sorted(by: { $0.key < $1.key }) {
                let n = (state.rejectedByType[type] ?? 0) + state.rejectedUnknownType
                if n > 0 { try run.recordRejected(count: n) }
                results.append(try run.complete())
            }
            // Types whose every element was malformed still get a run that says so.
            for (type, n) in state.rejectedByType where state.runs[type] == nil {
                let run = try session.beginTypeRun(SampleTypeDescriptor(type), kind: .fullScan)
                state.runs[type] = run
                try run.recordRejected(count: n)
                results.append(try run.complete())
            }
            // An export is the whole visible state: a type earlier imports held and this one
            // does not has lost every record. Its full-scan run sees nothing and closes them.
            for type in try typesOfEarlierImports(excluding: session.observationID) where state.runs[type] == nil {
                let run = try session.beginTypeRun(SampleTypeDescriptor(type, category: Self.category(type)), kind: .fullScan)
                state.runs[type] = run
                if state.rejectedUnknownType > 0 { try run.recordRejected(count: state.rejectedUnknownType) }
                results.append(try run.complete())
            }
            let edits = try matchEdits(session.observationID)
            let relationships = try writeRelationships(state: state, session: session)
            // The notes; the UTC offset was recorded before the runs completed.
            try session.updateContext(timeZoneSecondsFromGMT: nil, notes: notes(location: location, state: state, stream: stream))
            let status = try session.finish()
            let totals = pipeline.totals
            return Result(observationId: session.observationID, status: status.rawValue, source: location.displayName,
                          records: state.records, types: state.runs.count, appeared: totals.appeared - edits, changed: totals.changed + edits,
                          disappeared: results.reduce(0) { $0 + $1.deletedEvents } - edits, unchanged: totals.unchanged,
                          relationships: relationships, rejected: state.rejected, rejections: state.rejections,
                          controlCharactersReplaced: stream.controlCharactersReplaced, bytes: stream.bytesRead,
                          seconds: Date().timeIntervalSince(started))
        } catch {
            // Let queued pages finish (they stop at the first error) before undoing them.
            _ = try? pipeline.flush()
            let wrapped = Self.wrap(error, location: location)
            do {
                try session.revert(reason: "import failed and was reverted: \(wrapped.message)")
            } catch let revertError {
                throw ImportError(.storage, "\(wrapped.message); reverting the partial import also failed, so observation \(session.observationID) will be marked interrupted with its committed pages (run `hp-node observations`)", cause: revertError)
            }
            throw wrapped
        }
    }

    static func wrap(_ error: any Error, location: ExportLocation) -> ImportError {
        if let e = error as? ImportError { return e }
        if let e = error as? DatabaseError, e.resultCode == .SQLITE_FULL {
            return ImportError(.storage, "the disk is full while importing \(location.displayName); nothing was imported. Free space and import again", cause: e)
        }
        if let e = error as? ArchiveError { return ImportError(.storage, "storing \(location.displayName) failed: \(e.message); nothing was imported", cause: e) }
        return ImportError(.storage, "importing \(location.displayName) failed; nothing was imported", cause: error)
    }

    private func accept(_ item: ImportedSample, state: State, session: CaptureSession, pipeline: PipelinedPageWriter) throws {
        state.records += 1
        for child in item.children {
            state.pendingRelations.append((item, child))
            if state.pendingRelations.count >= 1000 { try savePendingRelations(state) }
        }
        let p = try pending(item.typeIdentifier, state: state, session: session)
        if let u = item.sample.unit, u != p.lastUnit {
            p.units.insert(u)
            p.lastUnit = u
        }
        try append(item.sample, to: p, state: state, pipeline: pipeline)
    }

    /// The type's pending page, its run begun on its first record.
    private func pending(_ type: String, state: State, session: CaptureSession) throws -> Pending {
        if let last = state.last, last.type == type { return last }
        if let p = state.pending[type] {
            state.last = p
            return p
        }
        let run = try state.runs[type] ?? session.beginTypeRun(SampleTypeDescriptor(type, category: Self.category(type)), kind: .fullScan)
        state.runs[type] = run
        let p = Pending(type: type, run: run)
        state.pending[type] = p
        state.last = p
        return p
    }

    /// Buffers a sample; hands over its type's page when full, or the largest page when
    /// too many samples are buffered. A page buffer starts with room for the type's
    /// previous page and half again (within the `reserved` budget), so it is not copied
    /// as it grows.
    private func append(_ sample: CapturedSample, to p: Pending, state: State, pipeline: PipelinedPageWriter) throws {
        // Half as much again as the previous page: pages handed over for `maxBuffered` vary in size.
        if p.samples.isEmpty, p.lastPage > 1 {
            let capacity = min(options.pageSize, p.lastPage + p.lastPage / 2)
            if state.reserved + capacity <= 2 * options.maxBuffered {
                p.samples.reserveCapacity(capacity)
                p.reserved = capacity
                state.reserved += capacity
            }
        }
        p.samples.append(sample)
        state.buffered += 1
        if p.samples.count >= options.pageSize {
            try flush(p, state: state, pipeline: pipeline)
        } else if state.buffered >= options.maxBuffered, let largest = state.pending.values.max(by: { $0.samples.count < $1.samples.count }) {
            try flush(largest, state: state, pipeline: pipeline)
        }
    }

    private func flush(_ p: Pending, state: State, pipeline: PipelinedPageWriter) throws {
        guard !p.samples.isEmpty else { return }
        let page = p.samples
        p.samples = []
        state.buffered -= page.count
        state.reserved -= p.reserved
        p.reserved = 0
        p.lastPage = page.count
        try pipeline.submit(page, to: p.run)
    }

    /// Hands over every pending page, in type order.
    private func flushAll(state: State, pipeline: PipelinedPageWriter) throws {
        for type in state.pending.keys.sorted() { try flush(state.pending[type]!, state: state, pipeline: pipeline) }
    }

    static func category(_ type: String) -> ValueKind {
        if type.hasPrefix("HKQuantityTypeIdentifier") { return .quantity }
        if type.hasPrefix("HKCategoryTypeIdentifier") { return .category }
        if type.hasPrefix("HKCorrelationTypeIdentifier") { return .correlation }
        if type == "HKWorkoutTypeIdentifier" { return .workout }
        if type == ExportParser.routeType { return .route }
        if type == ExportParser.activitySummaryType { return .activitySummary }
        return .other
    }

    /// Types that earlier import observations of this chain had runs for.
    private func typesOfEarlierImports(excluding obs: Int64) throws -> [String] {
        try node.archive.typesOfEarlierImports(chain: node.deviceChainID, excluding: obs)
    }

    /// Records without UUIDs cannot keep an identity across a value edit: the
    /// archive records disappeared + appeared. For the report, pairs of one
    /// disappeared and one appeared sample of the same type and time window
    /// (the semantic fingerprint) count as one edited record.
    private func matchEdits(_ obs: Int64) throws -> Int {
        try node.archive.semanticEditPairs(observation: obs)
    }

    // MARK: relationships

    private func prepareRelationTable() throws {
        try node.archive.prepareImportRelations()
    }

    private func savePendingRelations(_ state: State) throws {
        guard !state.pendingRelations.isEmpty else { return }
        let normalizer = SampleNormalizer(hasher: node.hasher)
        var rows: [ImportRelation] = []
        for (parent, child) in state.pendingRelations {
            let p = try normalizer.normalize(parent.sample, typeIdentifier: parent.typeIdentifier)
            let c = try normalizer.normalize(child.sample, typeIdentifier: child.typeIdentifier)
            let childJSON: String? = child.alsoEmitted ? nil : String(decoding: try JSONEncoder().encode(CodableSample(child.sample)), as: UTF8.self)
            rows.append(ImportRelation(parentType: parent.typeIdentifier, parentFingerprint: try SampleEncoding.strictFingerprintHash(p, occurrence: 0),
                                       childType: child.typeIdentifier, childFingerprint: try SampleEncoding.strictFingerprintHash(c, occurrence: 0),
                                       kind: child.kind.rawValue, alsoEmitted: child.alsoEmitted, childJSON: childJSON))
        }
        state.pendingRelations.removeAll(keepingCapacity: true)
        try node.archive.saveImportRelations(rows)
    }

    /// Correlation members normally also appear at top level; any that did not
    /// are written to their type's run so nothing in the file is lost.
    private func writeMissingMembers(state: State, session: CaptureSession, pipeline: PipelinedPageWriter) throws {
        try savePendingRelations(state)
        let missing = try node.archive.missingImportMembers(observation: session.observationID, seenTable: session.seenTable)
        guard !missing.isEmpty else { return }
        logger.info("correlation members missing at top level were archived", metadata: ["import.count": "\(missing.count)"])
        for (type, json) in missing {
            let sample = try JSONDecoder().decode(CodableSample.self, from: Data(json.utf8)).sample
            state.records += 1
            try append(sample, to: try pending(type, state: state, session: session), state: state, pipeline: pipeline)
        }
        try flushAll(state: state, pipeline: pipeline)
    }

    /// Records each relationship once, in the first observation that saw it.
    private func writeRelationships(state: State, session: CaptureSession) throws -> Int {
        try savePendingRelations(state)
        return try node.archive.writeImportRelationships(observation: session.observationID)
    }

    // MARK: observation notes

    private func notes(location: ExportLocation, state: State, stream: SanitizingStream) throws -> String {
        var o: [String: JSONValue] = [
            "importer": .string("apple-health-export"),
            "source_kind": .string(location.kind.rawValue),
            "records": .int(state.records),
            "rejected": .int(state.rejected),
            "control_characters_replaced": .int(stream.controlCharactersReplaced),
        ]
        if let d = state.exportDate { o["export_date"] = .string(CanonicalDate.string(d)) }
        if let off = state.exportOffset { o["export_utc_offset_seconds"] = .int(off) }
        if let l = state.locale { o["locale"] = .string(l) }
        // Personal characteristics: kept only as privacy hashes.
        if !state.me.isEmpty {
            o["me"] = .object(state.me.mapValues { .string(node.hasher.hmac(.personal, $0)) })
        }
        var units: [String: JSONValue] = [:]
        for (type, p) in state.pending where !p.units.isEmpty { units[type] = .array(p.units.sorted().map(JSONValue.string)) }
        o["display_units"] = .object(units)
        // Notes are at most 1,024 bytes (Protocol/bundles.md: an observation's bundle item must
        // verify): past that, the display units go first, then the personal hashes, each
        // replaced by how many were left out.
        var text = try CanonicalJSON.string(.object(o))
        if text.utf8.count > BundleItemSchema.maxText {
            o["display_units"] = .object([:])
            o["display_units_omitted"] = .int(units.count)
            text = try CanonicalJSON.string(.object(o))
        }
        if text.utf8.count > BundleItemSchema.maxText, !state.me.isEmpty {
            o["me"] = nil
            o["me_omitted"] = .int(state.me.count)
            text = try CanonicalJSON.string(.object(o))
        }
        return text
    }
}
