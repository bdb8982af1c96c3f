import Foundation
import GRDB
import HealthProbeArchive
import Logging

/// Continues a simulated person's timeline in an archive by one capture,
/// shaped like a HealthKit capture: one anchored (or full-scan) run per type.
public struct SimulatorCapture {
    public struct Options: Sendable {
        public var seed: UInt64 = 1
        public var days: Int = 1
        public var fullScan = false
        public var pageSize = 2000
        public var types: [SimulatedType] = SimulatedType.all
        /// A first capture builds the lookup indexes after its records (`CaptureSession.begin`).
        public var deferIndexes = true
        public init() {}
    }

    public struct Outcome: Sendable {
        public var observationID: Int64
        public var status: ObservationStatus
        public var throughDay: Int
        public var runs: [TypeRunResult]
    }

    static let seedKey = "simulator.seed"
    static let dayKey = "simulator.day"

    /// Anchors are `sim:v1:day=<T>`.
    static func anchor(_ T: Int) -> [UInt8] { Array("sim:v1:day=\(T)".utf8) }
    static func parseAnchor(_ bytes: [UInt8]?) -> Int? {
        guard let bytes, let text = String(bytes: bytes, encoding: .utf8), text.hasPrefix("sim:v1:day=") else { return nil }
        return Int(text.dropFirst("sim:v1:day=".count))
    }

    /// The seed and day a capture's notes record (`simulated capture seed=S day=T`); nil for other notes.
    static func position(notes: String) -> (seed: UInt64, day: Int)? {
        let words = notes.split(separator: " ")
        guard words.count == 4, words[0] == "simulated", words[1] == "capture", words[2].hasPrefix("seed="), words[3].hasPrefix("day="),
              let seed = UInt64(words[2].dropFirst(5)), let day = Int(words[3].dropFirst(4)), (0...maxDay).contains(day) else { return nil }
        return (seed, day)
    }

    /// The timeline's last day: about 172 years after its start (2025-01-06), inside the
    /// dates an archive holds (to 2199-12-31).
    static let maxDay = 63_000

    /// Runs one capture. Simulated time drives the observation's clock.
    public static func run(home: ArchiveHome, options: Options, logger: Logger = Archive.silentLogger) throws -> Outcome {
        guard options.days >= 1 && options.days <= 3650 else {
            throw ArchiveError(.invalidInput, "--days must be between 1 and 3650")
        }
        // Open once to read the simulator position, then reopen with the simulated clock.
        let clock = ManualClock(SimulatedPerson.epoch)
        let node = try home.open(clock: clock, logger: logger)
        let person = SimulatedPerson(seed: options.seed)
        var storedSeed = try node.archive.metadata(seedKey)
        var storedDay = try node.archive.metadata(dayKey).flatMap { Int($0) }
        if storedSeed == nil, storedDay == nil, let notes = try node.archive.lastSimulatorNotes(chain: node.deviceChainID) {
            // An archive restored from its server: the position is in its last capture's notes.
            guard let position = position(notes: notes) else {
                throw ArchiveError(.invalidState, "this archive holds simulated captures but neither its simulator position nor its last capture's notes say where the timeline is; reset the archive to start a simulated person again")
            }
            (storedSeed, storedDay) = (String(position.seed), position.day)
        }
        if let storedSeed, storedSeed != String(options.seed) {
            throw ArchiveError(.invalidInput, "this archive continues the simulated person with seed \(storedSeed); pass --seed \(storedSeed), or reset the archive to start another person")
        }
        let T = (storedDay ?? 0) + options.days
        guard T <= maxDay else {
            throw ArchiveError(.invalidInput, "the simulated timeline ends at day \(maxDay) (in 2197); this archive is at day \(storedDay ?? 0)")
        }
        let captureNumber = try node.archive.simulatorCaptureCount(chain: node.deviceChainID) + 1
        clock.set(SimulatedPerson.captureTime(at: T))
        let tz = person.timeZone(at: T)
        let context = ObservationContext(triggerReason: .simulator, osVersion: "17.1.2", timeZoneIdentifier: tz.identifier,
                                         timeZoneSecondsFromGMT: tz.secondsFromGMT(for: Date(timeIntervalSince1970: clock.now())),
                                         selectedTypes: options.types.map(\.identifier),
                                         notes: "simulated capture seed=\(options.seed) day=\(T)")
        let session = try CaptureSession.begin(node, context: context, deferIndexes: options.deferIndexes)
        var results: [TypeRunResult] = []
        for t in options.types {
            let from = try lastAnchor(node, type: t.identifier)
            let kind: TypeRunKind = options.fullScan ? .fullScan : .anchored
            let run = try session.beginTypeRun(t.descriptor, kind: kind, anchorBefore: from.map(anchor))
            if t.unauthorizedEvery > 0 && captureNumber % t.unauthorizedEvery == 0 {
                results.append(try run.fail(.unauthorized, errorKind: .authorizationDenied))
                continue
            }
            var page: [CapturedSample] = []
            var deleted: [String] = []
            var pageIndex = 0
            let failAfterFirstPage = t.failsEvery > 0 && captureNumber % t.failsEvery == 0
            var failed = false
            func flush() throws {
                if !page.isEmpty {
                    try run.writePage(index: pageIndex, samples: page)
                    pageIndex += 1
                    page.removeAll(keepingCapacity: true)
                    if failAfterFirstPage { failed = true }
                }
            }
            do {
                if options.fullScan {
                    try person.visible(t, at: T) { s in
                        if failed { return }
                        page.append(s)
                        if page.count >= options.pageSize { try flush() }
                    }
                } else {
                    try person.delta(t, from: from, to: T, added: { s in
                        if failed { return }
                        page.append(s)
                        if page.count >= options.pageSize { try flush() }
                    }, deleted: { deleted.append($0) })
                }
                if !failed { try flush() }
            }
            if failed {
                results.append(try run.fail(.failed, errorKind: .queryFailed, message: "simulated query failure"))
                continue
            }
            if !deleted.isEmpty && !options.fullScan {
                for chunk in stride(from: 0, to: deleted.count, by: options.pageSize) {
                    try run.recordDeletedObjects(index: pageIndex, uuids: Array(deleted[chunk..<min(chunk + options.pageSize, deleted.count)]))
                    pageIndex += 1
                }
            }
            results.append(try run.complete(anchorAfter: anchor(T)))
        }
        let status = try session.finish()
        try node.archive.setMetadata([seedKey: String(options.seed), dayKey: String(T)])
        return Outcome(observationID: session.observationID, status: status, throughDay: T, runs: results)
    }

    /// The anchor of the type's last completed run in this chain.
    static func lastAnchor(_ node: NodeArchive, type: String) throws -> Int? {
        let data = try node.archive.lastAnchor(chain: node.deviceChainID, type: type)
        return parseAnchor(data.map { Array($0) })
    }
}
