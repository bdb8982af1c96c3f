import Foundation
import Synchronization
import HealthProbeCanonical
#if canImport(Glibc)
import Glibc
#endif

/// The lines of a bundle that is still arriving, handed from the connection (which
/// receives, checks and inflates each part) to the thread applying them, a part at a
/// time: the bundle is applied while it arrives, never held whole in memory. A part
/// moves as its inflated bytes (one buffer, given back to the system when freed), or in
/// pieces of them, and is cut into lines on the applying side, so at most `depth` wait.
/// A line that a piece leaves unfinished goes on in the next, as in the bundle's bytes.
/// The connection says whether the transfer ended whole (`finish`) before the applier's
/// transaction may commit (`checked`). With `partWait`, the applier waits that long at
/// most for the next part and the connection as long for room to hand one over, and with
/// a `Pace`, neither waits past the time the bytes handed over so far (and one more part)
/// may take at its rate, after its grace: then the lines end, the transfer counts as
/// stalled (`stalled`), and `checked` refuses.
/// Used by a node's restore (`RESTORE_PART`s) and by a server receiving `BUNDLE_PART`s.
public final class ArrivingLines: Sendable {
    /// Inflated parts waiting for the applier.
    public let queue: BoundedQueue<[UInt8]>
    private let verdict = Mutex<(any Error)?>(Incomplete())
    /// The manifest hash the sender declared at the end (a streamed bundle's).
    private let declared = Mutex<String?>(nil)
    private let stall = Mutex(false)
    private let partWait: Duration?
    private let pace: Pace?
    /// Bytes handed over so far.
    private let handed = Mutex(0)
    /// Parts the applier has cut into lines, kept (at most `spareLimit`) for the connection to
    /// fill again: a part inflated or copied into one of them touches no newly mapped memory
    /// (parts of a megabyte or more are mapped on their own, `Heap`).
    private let spares = Mutex<[[UInt8]]>([])
    private let spareLimit: Int

    /// The least average rate a transfer keeps: from `start`, `grace`, and then `bytesPerSecond`
    /// for every byte handed over and `ahead` more (the next part's).
    public struct Pace: Sendable {
        public var start: ContinuousClock.Instant
        public var grace: Double
        public var bytesPerSecond: Double
        public var ahead: Int
        public init(start: ContinuousClock.Instant = .now, grace: Double, bytesPerSecond: Double, ahead: Int) {
            (self.start, self.grace, self.bytesPerSecond, self.ahead) = (start, grace, max(bytesPerSecond, 1), ahead)
        }
    }

    public init(depth: Int = 2, partWait: Duration? = nil, pace: Pace? = nil) {
        queue = BoundedQueue(capacity: depth)
        spareLimit = max(depth, 1)
        self.partWait = partWait
        self.pace = pace
    }

    /// Queues one inflated part (waits while `depth` parts wait, within the part wait and
    /// the deadline); throws once the applier stopped, or when the wait ran out (stalled).
    public func put(_ part: [UInt8]) throws {
        guard let until = waitLimit() else {
            try queue.put(part)
            handed.withLock { $0 += part.count }
            return
        }
        do {
            try queue.put(part, waitingUntil: until)
            handed.withLock { $0 += part.count }
        } catch is BoundedQueue<[UInt8]>.WaitExpired {
            stall.withLock { $0 = true }
            queue.cancel(Stalled())
            throw Stalled()
        }
    }

    /// Bytes handed over so far.
    public var bytesHanded: Int { handed.withLock { $0 } }

    /// A buffer a part already cut into lines held (its old bytes still in it, to be
    /// overwritten), or an empty one when none is spare.
    public func spareBuffer() -> [UInt8] { spares.withLock { $0.popLast() ?? [] } }

    /// Keeps `part`, which the applier is done with, for `spareBuffer`.
    fileprivate func recycle(_ part: [UInt8]) {
        guard part.capacity > 0 else { return }
        spares.withLock { if $0.count < spareLimit { $0.append(part) } }
    }

    /// Whether the applier has stopped taking parts (what is put is dropped).
    public var stopped: Bool { queue.isCancelled }

    /// Until when a wait for a part, or for room for one, may last; nil: no limit.
    private func waitLimit() -> ContinuousClock.Instant? {
        let wait = partWait.map { ContinuousClock.now + $0 }
        let bytes = handed.withLock { $0 }
        let deadline = pace.map { $0.start + .seconds($0.grace + Double(bytes + $0.ahead) / $0.bytesPerSecond) }
        switch (wait, deadline) {
        case (let w?, let d?): return min(w, d)
        case (let w, let d): return w ?? d
        }
    }

    /// The transfer ended: whole (`failure` nil) or not; `manifestHash`: the one the sender
    /// declared at the end (`BUNDLE_STREAM_END`, `BUNDLE_END`).
    public func finish(failure: (any Error)?, manifestHash: String? = nil) {
        declared.withLock { $0 = manifestHash }
        verdict.withLock { $0 = failure }
        queue.close(failure: failure)
    }

    /// The manifest hash declared at the end; throws unless the transfer ended whole with one.
    public func declaredManifestHash() throws -> String {
        try checked()
        guard let hash = declared.withLock({ $0 }) else { throw Incomplete() }
        return hash
    }

    /// Throws unless the transfer ended whole.
    public func checked() throws {
        if stalled { throw Stalled() }
        if let e = verdict.withLock({ $0 }) { throw e }
    }

    /// Whether the lines ended because no part came within `partWait`.
    public var stalled: Bool { stall.withLock { $0 } }

    /// The lines in order, without their newlines, for the applier (they end early when
    /// the transfer failed or stalled).
    public var lines: Lines { Lines(owner: self) }

    /// The next part, nil at the end (or when none came in time: then `stalled`).
    fileprivate func nextPart() -> [UInt8]? {
        guard let until = waitLimit() else { return try? queue.take() }
        do {
            return try queue.take(waitingUntil: until)
        } catch is BoundedQueue<[UInt8]>.WaitExpired {
            stall.withLock { $0 = true }
            queue.cancel(Stalled())
            return nil
        } catch {
            return nil
        }
    }

    public struct Lines: Sequence, IteratorProtocol, LineEndReporting, StoppableLines {
        let owner: ArrivingLines
        var part: [UInt8] = []
        var start = 0
        /// The end of a line the part before left unfinished.
        var carried: [UInt8] = []
        public private(set) var lastLineUnterminated = false

        public mutating func next() -> [UInt8]? {
            while true {
                while start >= part.count {
                    guard let more = owner.nextPart() else {
                        guard !carried.isEmpty else { return nil }
                        lastLineUnterminated = true
                        defer { carried = [] }
                        return carried
                    }
                    owner.recycle(part)
                    (part, start) = (more, 0)
                }
                let from = start
                let newline = part.withUnsafeBufferPointer { buf in
                    memchr(buf.baseAddress! + from, 0x0A, buf.count - from).map { buf.baseAddress!.distance(to: $0.assumingMemoryBound(to: UInt8.self)) }
                }
                guard let end = newline else {
                    // Unfinished here: it goes on in the next part.
                    carried += part[from...]
                    start = part.count
                    continue
                }
                start = end + 1
                guard carried.isEmpty else {
                    defer { carried = [] }
                    return carried + part[from..<end]
                }
                return Array(part[from..<end])
            }
        }

        /// The reader stops: the parts waiting are dropped and the next wait ends at once.
        public func stopLines() { owner.queue.cancel() }
    }

    /// How many newlines `part` holds.
    public static func lineCount(_ part: [UInt8]) -> Int {
        part.withUnsafeBufferPointer { LineSplitter.newlines(in: $0) }
    }

    /// The first line of `part`, without its newline (the whole part when it holds none).
    public static func firstLine(_ part: [UInt8]) -> [UInt8] {
        Array(part[..<(part.firstIndex(of: 0x0A) ?? part.endIndex)])
    }

    /// The applier's transaction stops here when the bundle did not arrive whole.
    public struct Incomplete: Error, CustomStringConvertible {
        public init() {}
        public var description: String { "the bundle did not arrive whole; nothing of it was kept" }
    }

    /// No part came within `partWait`.
    public struct Stalled: Error, CustomStringConvertible {
        public init() {}
        public var description: String { "the bundle's next part did not come in time; nothing of it was kept" }
    }
}
