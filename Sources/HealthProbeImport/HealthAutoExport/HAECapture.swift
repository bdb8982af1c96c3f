import HealthProbeArchive
import HealthProbeCanonical

/// Records one Health Auto Export push as one observation through the archive's
/// capture path: per type a full scan of the push's closed window (what is absent
/// in it disappears) or, for a window that only adds, an anchored run (nothing
/// disappears).
public struct HAECapture {
    /// What the observation recorded.
    public struct Result: Sendable, Equatable {
        public var observationId: Int64
        public var status: String
        public var records = 0
        public var types = 0
        public var appeared = 0
        public var changed = 0
        public var unchanged = 0
        public var disappeared = 0
        public var unrecognised = 0
        /// Per archived type: the largest delay from a sample's end to this push, in
        /// seconds, among samples that appeared now (late arrivals, not losses).
        public var latenessByType: [String: Double] = [:]
    }

    let node: NodeArchive
    /// Samples of one type handed to the write pipeline at once (its transactions
    /// gather up to `PipelinedPageWriter.defaultTransactionSamples`).
    public var pageSize = 5_000
    /// Samples buffered across all types before the largest buffer is written: memory
    /// stays bounded however the types interleave.
    public var maxBuffered = 20_000

    public init(node: NodeArchive) { self.node = node }

    /// Writes `payload` as one observation with `window`.
    public func record(_ payload: HAEPayload, window: HAEWindow) throws -> Result {
        var types: [String: ValueKind] = [:]
        func note(_ s: HAESample) {
            if types[s.typeIdentifier] == nil { types[s.typeIdentifier] = s.sample.valueKind }
            s.children.forEach(note)
        }
        payload.samples.forEach(note)
        return try record(types: types, unrecognised: payload.unrecognised.count, expected: nil, window: window) { add in
            for s in payload.samples { try add(s) }
        }
    }

    /// Writes `body`, which `decoder.scan` checked and counted as `scan`, as one
    /// observation with `window`: a second pass streams its samples into the type runs
    /// chunk by chunk, so no more than `maxBuffered` samples wait here (and three chunks
    /// in the write pipeline).
    public func record(_ body: HAEBody, decoder: HAEDecoder, scan: HAEScan, window: HAEWindow) throws -> Result {
        try record(types: scan.types, unrecognised: scan.unrecognised, expected: scan.samples, window: window) { add in
            try decoder.stream(body, add)
        }
    }

    /// One type's run and its samples waiting for the next page.
    private final class Pending {
        let run: TypeRunWriter
        var samples: [CapturedSample] = []
        init(_ run: TypeRunWriter) { self.run = run }
    }

    private func record(types: [String: ValueKind], unrecognised: Int, expected: Int?, window: HAEWindow,
                        samples: ((HAESample) throws -> Void) throws -> Void) throws -> Result {
        var categories: [String: ValueKind] = [:]
        for (type, kind) in types where categories[window.archiveType(type)] == nil { categories[window.archiveType(type)] = kind }
        let order = categories.keys.sorted()
        let notes = CaptureWindowNote(period: window.period?.rawValue, aggregation: window.aggregation?.rawValue, closed: window.closed,
                                      open: window.open, unrecognised: unrecognised).text
        let session = try CaptureSession.begin(node, context: ObservationContext(triggerReason: .scheduled, selectedTypes: order, notes: notes),
                                               deferIndexes: false)
        var r = Result(observationId: session.observationID, status: "")
        r.unrecognised = unrecognised
        // Normalizing and writing run on the pipeline's queues while the body is read.
        let pipeline = PipelinedPageWriter(session: session)
        do {
            var runs: [String: Pending] = [:]
            for type in order {
                let run = try session.beginTypeRun(SampleTypeDescriptor(type, category: categories[type]), kind: window.closed == nil ? .anchored : .fullScan)
                run.closingWindow = window.closed
                runs[type] = Pending(run)
            }
            var buffered = 0
            func write(_ p: Pending) throws {
                try pipeline.submit(p.samples, to: p.run)
                buffered -= p.samples.count
                p.samples.removeAll(keepingCapacity: true)
            }
            func add(_ s: HAESample) throws {
                guard let p = runs[window.archiveType(s)] else {
                    throw ArchiveError(.invalidState, "the Health Auto Export body changed between its check and its recording; post it again")
                }
                p.samples.append(s.sample)
                buffered += 1
                r.records += 1
                if p.samples.count >= pageSize {
                    try write(p)
                } else if buffered > maxBuffered, let largest = runs.values.max(by: { $0.samples.count < $1.samples.count }) {
                    try write(largest)
                }
                for c in s.children { try add(c) }
            }
            try samples(add)
            if let expected, expected != r.records {
                throw ArchiveError(.invalidState, "the Health Auto Export body changed between its check and its recording; post it again")
            }
            for type in order {
                if let p = runs[type], !p.samples.isEmpty { try write(p) }
            }
            let totals = try pipeline.flush()
            r.appeared = totals.appeared
            r.changed = totals.changed
            r.unchanged = totals.unchanged
            for type in order {
                guard let p = runs[type] else { continue }
                r.disappeared += try p.run.complete().deletedEvents
            }
            r.types = order.count
            r.status = try session.finish().rawValue
            r.latenessByType = try node.lateness(observationID: r.observationId)
            return r
        } catch {
            // Let queued pages finish (they stop at the first error) before undoing them.
            _ = try? pipeline.flush()
            try? session.revert(reason: "a Health Auto Export push failed and was reverted")
            throw error
        }
    }
}
