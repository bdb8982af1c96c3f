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
    public var pageSize = 5_000

    public init(node: NodeArchive) { self.node = node }

    /// Writes `payload` as one observation with `window`.
    public func record(_ payload: HAEPayload, window: HAEWindow) throws -> Result {
        var byType: [String: [CapturedSample]] = [:]
        var order: [String] = []
        func add(_ s: HAESample) {
            let t = window.archiveType(s)
            if byType[t] == nil { order.append(t) }
            byType[t, default: []].append(s.sample)
            s.children.forEach(add)
        }
        payload.samples.forEach(add)
        let notes = CaptureWindowNote(period: window.period?.rawValue, aggregation: window.aggregation?.rawValue, closed: window.closed,
                                      unrecognised: payload.unrecognised.count).text
        let session = try CaptureSession.begin(node, context: ObservationContext(triggerReason: .scheduled, selectedTypes: order.sorted(), notes: notes),
                                               deferIndexes: false)
        var r = Result(observationId: session.observationID, status: "")
        r.unrecognised = payload.unrecognised.count
        do {
            for type in order.sorted() {
                let samples = byType[type] ?? []
                let run = try session.beginTypeRun(SampleTypeDescriptor(type, category: samples.first?.valueKind),
                                                   kind: window.closed == nil ? .anchored : .fullScan)
                run.closingWindow = window.closed
                var page = 0, start = 0
                while start < samples.count {
                    let chunk = Array(samples[start..<min(start + pageSize, samples.count)])
                    let p = try run.writePage(index: page, samples: chunk)
                    r.appeared += p.appeared
                    r.changed += p.changed
                    r.unchanged += p.unchanged
                    page += 1
                    start += chunk.count
                }
                let done = try run.complete()
                r.disappeared += done.deletedEvents
                r.records += samples.count
            }
            r.types = order.count
            r.status = try session.finish().rawValue
            r.latenessByType = try node.lateness(observationID: r.observationId)
            return r
        } catch {
            try? session.revert(reason: "a Health Auto Export push failed and was reverted")
            throw error
        }
    }
}
