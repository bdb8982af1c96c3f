import Foundation
import GRDB
@testable import HealthProbeArchive

public let heartRate = SampleTypeDescriptor("HKQuantityTypeIdentifierHeartRate", displayName: "Heart Rate", category: .quantity)
public let steps = SampleTypeDescriptor("HKQuantityTypeIdentifierStepCount", displayName: "Steps", category: .quantity)

/// A synthetic heart-rate sample, 5 minutes after the previous index.
public func hr(_ i: Int, value: Double = 60, uuid: Bool = true) -> CapturedSample {
    CapturedSample(uuid: uuid ? String(format: "00000000-0000-4000-8000-%012d", i) : nil,
                   startDate: 1_700_000_000 + Double(i) * 300, endDate: 1_700_000_000 + Double(i) * 300,
                   valueKind: .quantity, numericValue: value, unit: "count/min",
                   source: SourceDescriptor(name: "Test Watch", bundleIdentifier: "com.example.watch", productType: "Watch6,1", version: "10.1", operatingSystemVersion: "10.1"))
}

/// Captures one observation with a single type run.
@discardableResult
public func capture(_ node: NodeArchive, _ type: SampleTypeDescriptor = heartRate, kind: TypeRunKind = .fullScan,
                    samples: [CapturedSample], deleted: [String] = []) throws -> (obs: Int64, result: TypeRunResult) {
    let session = try CaptureSession.begin(node, context: ObservationContext(triggerReason: .manual, selectedTypes: [type.identifier]))
    let run = try session.beginTypeRun(type, kind: kind)
    if !samples.isEmpty { try run.writePage(index: 0, samples: samples) }
    if !deleted.isEmpty { try run.recordDeletedObjects(index: 1, uuids: deleted) }
    let r = try run.complete()
    try session.finish()
    return (session.observationID, r)
}

/// Event counts by kind of one observation.
public func events(_ node: NodeArchive, observation: Int64) throws -> [String: Int] {
    try node.archive.writer.read { db in
        var out: [String: Int] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT \(EventKind.nameSQL("event_kind")) AS event_kind, count(*) AS n FROM sample_observation_events WHERE observation_id = ? GROUP BY 1", arguments: [observation]) {
            out[row["event_kind"]] = row["n"]
        }
        return out
    }
}

/// A plain GRDB queue on `path`, opened only after the process-wide SQLite
/// settings are applied (tests run in parallel; whichever opens first decides).
public func rawQueue(_ path: String) throws -> DatabaseQueue {
    ProcessSettings.apply()
    return try DatabaseQueue(path: path)
}

/// A plain GRDB pool on `path`, opened after the process-wide SQLite settings.
public func rawPool(_ path: String) throws -> DatabasePool {
    ProcessSettings.apply()
    return try DatabasePool(path: path)
}

/// Captures one observation of `type` in `zone`.
@discardableResult
public func captureIn(_ node: NodeArchive, _ type: SampleTypeDescriptor = heartRate, zone: String? = nil,
               samples: [CapturedSample], fail: Bool = false) throws -> Int64 {
    let session = try CaptureSession.begin(node, context: ObservationContext(triggerReason: .manual, timeZoneIdentifier: zone, selectedTypes: [type.identifier]))
    let run = try session.beginTypeRun(type, kind: .fullScan)
    if !samples.isEmpty { try run.writePage(index: 0, samples: samples) }
    if fail { try run.fail(.failed, errorKind: .queryFailed) } else { try run.complete() }
    try session.finish()
    return session.observationID
}

/// A 5-minute heart-rate sample `i` of a day starting at `day0`.
public func beat(_ day0: Double, _ i: Int, value: Double) -> CapturedSample {
    CapturedSample(uuid: String(format: "00000000-0000-4000-8000-%012d", Int(day0 / 300) + i), startDate: day0 + Double(i) * 300, endDate: day0 + Double(i) * 300 + 60,
                   valueKind: .quantity, numericValue: value, unit: "count/min",
                   source: SourceDescriptor(name: "Test Watch", bundleIdentifier: "com.example.watch", productType: "Watch6,1", version: "10.1", operatingSystemVersion: "10.1"))
}

