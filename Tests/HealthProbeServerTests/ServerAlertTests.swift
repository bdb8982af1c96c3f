import Foundation
import Logging
import NIOConcurrencyHelpers
import Testing
@testable import HealthProbeServer
import HealthProbeTestSupport

/// Server-level conditions (disk space, certificate expiry, failing delivery): admins only,
/// on the injected clock, to the real signed-webhook receiver.
@Suite("Server-level alerts")
struct ServerAlertTests {
    @Test("disk space low, a certificate expiring within 14 days, a message undelivered for a day: told to the admin only; each resolves")
    func serverLevel() async throws {
        let dir = TempDir()
        let receiver = AlertReceiver()
        try await receiver.start()
        let (r, secrets) = try AlertTests().household(dir, receiver: receiver)
        let t0 = Date().timeIntervalSince1970.rounded()
        let time = NIOLockedValueBox(t0)
        // A certificate made ten years less seven days ago: it ends in seven days.
        let tls = TempDir()
        try ServerIdentity.generate(now: Date(timeIntervalSince1970: t0 - 10 * 365 * 86_400 + 7 * 86_400)).write(directory: tls.path)
        let free = NIOLockedValueBox<Int64>(2_000_000_000)
        var conditions = ServerConditions(dataDirectory: dir.path, certificateFile: tls.path + "/server-cert.pem")
        conditions.space = { _ in (free.withLockedValue { $0 }, 100_000_000_000) }
        var s = AlertService<ContinuousClock>.Settings()
        s.server = conditions
        s.conditions = AlertConditions(defaultCadence: 1e9, grace: 0)
        let alerts = AlertService(registry: r, sender: .shared, settings: s, clock: ContinuousClock(), now: { time.withLockedValue { $0 } },
                                  logger: Logger(label: "test.alerts"))

        let first = try alerts.evaluate()
        #expect(Set(first.events.map(\.condition)) == [.diskSpaceLow, .certificateExpiring])
        #expect(first.queued == 1, "one message, to the admin")
        let sent = try await alerts.deliver()
        #expect(sent.delivered == 1 && sent.failed == 0)
        var got = try AlertTests().checkedDeliveries(receiver, secrets: secrets)
        #expect(got.keys.sorted() == ["ann"])
        let events = try #require(got["ann"]?.first?["events"] as? [[String: Any]])
        #expect(events.allSatisfy { $0["link"] == nil && ($0["detail"] as? String)?.isEmpty == false })
        let disk = try #require(events.first { $0["condition"] as? String == "disk_space_low" })
        #expect(disk["detail"] as? String == "1.9 GiB free (2%) for the data directory", "in GiB, as the config's disk_free_gib")
        let cert = try #require(events.first { $0["condition"] as? String == "certificate_expiring" })
        #expect((cert["detail"] as? String)?.hasSuffix("in 6 day(s)") == true || (cert["detail"] as? String)?.hasSuffix("in 7 day(s)") == true)
        let bob = try #require(try r.person(named: "bob"))
        #expect(try r.alertStates(for: bob).isEmpty && r.alertStates(for: try r.person(named: "ann")).count == 2)
        // Only an admin acknowledges them (`hp-server alert ack --chain server`).
        #expect(throws: DeviceRegistry.AuthError.self) {
            try r.acknowledgeAlert(chain: AlertCondition.serverKey, condition: .certificateExpiring, person: bob, now: t0)
        }
        let ann = try #require(try r.person(named: "ann"))
        try r.acknowledgeAlert(chain: AlertCondition.serverKey, condition: .certificateExpiring, person: ann, now: t0)

        // Space freed: resolved, told to the admin.
        free.withLockedValue { $0 = 50_000_000_000 }
        time.withLockedValue { $0 += 60 }
        let freed = try alerts.evaluate()
        #expect(freed.events.map(\.condition) == [.diskSpaceLow] && freed.events.map(\.event) == [.resolved] && freed.queued == 1)

        // A message undelivered after a failed attempt for over a day: delivery_failing.
        receiver.down.withLockedValue { $0 = true }
        #expect(try await alerts.deliver().failed == 1)
        time.withLockedValue { $0 += 86_000 }
        #expect(try !alerts.evaluate().events.contains { $0.condition == .deliveryFailing }, "not yet a day")
        time.withLockedValue { $0 += 500 }
        #expect(try alerts.evaluate().events.contains { $0.condition == .deliveryFailing && $0.event == .fired })
        receiver.down.withLockedValue { $0 = false }
        time.withLockedValue { $0 += 7 * 3600 }
        _ = try await alerts.deliver()
        time.withLockedValue { $0 += 60 }
        #expect(try alerts.evaluate().events.contains { $0.condition == .deliveryFailing && $0.event == .resolved })
        got = try AlertTests().checkedDeliveries(receiver, secrets: secrets)
        #expect(got.keys.sorted() == ["ann"], "bob and cat never hear of the server")
        try await receiver.stop()
    }

    @Test("backups failing: no scheduled backup for two intervals and an hour, a bundle or a due registry snapshot a day away from object storage, or a restored copy not adopted; told to the admin only; each resolves")
    func backupsFailing() async throws {
        let dir = TempDir(), backups = TempDir()
        let receiver = AlertReceiver()
        try await receiver.start()
        let (r, secrets) = try AlertTests().household(dir, receiver: receiver)
        let store = ServerStore(root: dir.path + "/data")
        try store.create()
        let t0 = Date().timeIntervalSince1970.rounded()
        let time = NIOLockedValueBox(t0)
        var conditions = ServerConditions(dataDirectory: dir.path, certificateFile: nil)
        conditions.space = { _ in (50_000_000_000, 100_000_000_000) }
        conditions.scheduledBackups = (backups.path, 3600)
        conditions.startedAt = t0
        conditions.offsiteUploads = true
        var s = AlertService<ContinuousClock>.Settings()
        s.server = conditions
        s.conditions = AlertConditions(defaultCadence: 1e9, grace: 0)
        let alerts = AlertService(registry: r, sender: .shared, settings: s, clock: ContinuousClock(), now: { time.withLockedValue { $0 } },
                                  logger: Logger(label: "test.alerts"))
        #expect(try alerts.evaluate().events.isEmpty)
        // The first backup is due an hour after the start; three hours without one fire.
        time.withLockedValue { $0 = t0 + 3 * 3600 - 60 }
        #expect(try alerts.evaluate().events.isEmpty, "not yet two intervals and an hour")
        time.withLockedValue { $0 = t0 + 3 * 3600 + 60 }
        let fired = try alerts.evaluate()
        #expect(fired.events.map(\.condition) == [.backupFailing] && fired.events.map(\.event) == [.fired] && fired.queued == 1)
        #expect(try await alerts.deliver().delivered == 1)
        let got = try AlertTests().checkedDeliveries(receiver, secrets: secrets)
        #expect(got.keys.sorted() == ["ann"], "the admin only")
        let detail = try #require((got["ann"]?.first?["events"] as? [[String: Any]])?.first?["detail"] as? String)
        #expect(detail.contains("no scheduled backup was written in \(backups.path)") && detail.contains("every 1 hour(s)"), "\(detail)")
        // A backup written: resolved.
        var made = 0
        func backUp() throws {
            made += 1
            _ = try ServerBackup.run(store, to: backups.path + "/b\(made)", now: time.withLockedValue { $0 })
        }
        try backUp()
        time.withLockedValue { $0 += 60 }
        let resolved = try alerts.evaluate()
        #expect(resolved.events.map(\.condition) == [.backupFailing] && resolved.events.map(\.event) == [.resolved])

        // A bundle queued for object storage a day and a minute ago, still waiting (the scheduled
        // backups going on meanwhile): fired again.
        let queuedAt = time.withLockedValue { $0 }
        try r.enqueueUploads(chain: String(repeating: "a", count: 64), sequences: [1], now: queuedAt)
        time.withLockedValue { $0 += 86_400 - 60 }
        try backUp()
        #expect(try !alerts.evaluate().events.contains { $0.condition == .backupFailing && $0.event == .fired }, "not yet a day")
        time.withLockedValue { $0 += 120 }
        try backUp()
        let waiting = try alerts.evaluate()
        #expect(waiting.events.contains { $0.condition == .backupFailing && $0.event == .fired })
        let state = try #require(try r.alertStates(for: try r.person(named: "ann")).first { $0.condition == .backupFailing })
        #expect(state.detail.contains("is still not in object storage"), "\(state.detail)")
        #expect(try r.alertStates(for: try #require(try r.person(named: "bob"))).isEmpty)
        try r.markUploaded(chain: String(repeating: "a", count: 64), sequence: 1, sha256: String(repeating: "0", count: 64), key: "k", now: queuedAt + 86_500)
        time.withLockedValue { $0 += 60 }
        #expect(try alerts.evaluate().events.contains { $0.condition == .backupFailing && $0.event == .resolved })
        #expect(try alerts.evaluate().events.isEmpty)

        // Every bundle uploaded, but a registry snapshot due that never arrived (a key that may
        // not list the prefix, say): the people, devices and credentials are not off this machine.
        // Counted in the time the server served while it was due: days stopped are not (a server
        // started again takes one at its start); many short runs (a server that keeps crashing
        // and restarting) add up as one long one. Fired after a day and the snapshot interval of
        // serving (a working server may wait that long: 300 s by default), resolved when one arrives.
        try r.markOffsiteSnapshotDue(now: time.withLockedValue { $0 })
        try r.markOffsiteSnapshotDue(now: time.withLockedValue { $0 } + 3600)  // the earliest is kept
        try r.countOffsiteSnapshotDue(served: 600)
        time.withLockedValue { $0 += 3 * 86_400 }  // stopped for three days
        try backUp()
        #expect(try !alerts.evaluate().events.contains { $0.condition == .backupFailing && $0.event == .fired }, "three days stopped are not serving")
        for _ in 0..<95 { try r.countOffsiteSnapshotDue(served: 900) }  // 95 runs of 15 minutes: 86,100 s of serving
        time.withLockedValue { $0 += 60 }
        try backUp()
        #expect(try !alerts.evaluate().events.contains { $0.condition == .backupFailing && $0.event == .fired }, "not yet a day and an interval of serving")
        try r.countOffsiteSnapshotDue(served: 900)  // 87,000 s
        time.withLockedValue { $0 += 60 }
        try backUp()
        #expect(try alerts.evaluate().events.contains { $0.condition == .backupFailing && $0.event == .fired })
        let snapshotState = try #require(try r.alertStates(for: try r.person(named: "ann")).first { $0.condition == .backupFailing })
        #expect(snapshotState.detail.contains("no registry snapshot (people, devices, credentials) has reached object storage"), "\(snapshotState.detail)")
        #expect(snapshotState.detail.contains("(24.2 hours of serving since)"), "\(snapshotState.detail)")
        try r.clearOffsiteSnapshotDue()
        #expect(try r.offsiteSnapshotDue() == nil)
        time.withLockedValue { $0 += 60 }
        #expect(try alerts.evaluate().events.contains { $0.condition == .backupFailing && $0.event == .resolved })

        // A restored copy not adopted: its backups and uploads wait, and the admin is told how to resume them.
        try RestoredCopy.mark(dir.path, source: "/var/backups/healthprobe/x", now: time.withLockedValue { $0 })
        time.withLockedValue { $0 += 60 }
        try backUp()
        let paused = try alerts.evaluate()
        #expect(paused.events.map(\.condition) == [.backupFailing] && paused.events.map(\.event) == [.fired])
        let pausedState = try #require(try r.alertStates(for: try r.person(named: "ann")).first { $0.condition == .backupFailing })
        #expect(pausedState.detail.contains("restored from /var/backups/healthprobe/x") && pausedState.detail.contains("hp-server adopt --data \(dir.path)"), "\(pausedState.detail)")
        #expect(try RestoredCopy.adopt(dir.path))
        time.withLockedValue { $0 += 60 }
        #expect(try alerts.evaluate().events.map(\.event) == [.resolved])
        try await receiver.stop()
    }

    @Test("the newest backup counts from when it was complete: a backup that began long ago but finished lately is not late; manifests without finished_at count from created_at")
    func backupCountsFromItsEnd() throws {
        let dir = TempDir()
        func manifest(_ name: String, _ fields: [String: Double]) throws {
            try FileManager.default.createDirectory(atPath: dir.file(name), withIntermediateDirectories: true)
            try JSONSerialization.data(withJSONObject: fields).write(to: URL(fileURLWithPath: dir.file(name) + "/" + ServerBackup.manifestName))
        }
        try manifest("old", ["created_at": 1_000])
        #expect(ServerConditions.newestBackup(in: dir.path) == 1_000)
        try manifest("long", ["created_at": 900, "finished_at": 9_000])
        #expect(ServerConditions.newestBackup(in: dir.path) == 9_000)
        // A null finished_at falls back to created_at.
        let other = TempDir()
        try FileManager.default.createDirectory(atPath: other.file("null"), withIntermediateDirectories: true)
        try Data(#"{"created_at": 9500, "finished_at": null}"#.utf8).write(to: URL(fileURLWithPath: other.file("null") + "/" + ServerBackup.manifestName))
        #expect(ServerConditions.newestBackup(in: other.path) == 9_500)
        // A directory still being written (no manifest yet) counts for nothing.
        try FileManager.default.createDirectory(atPath: dir.file("writing"), withIntermediateDirectories: true)
        #expect(ServerConditions.newestBackup(in: dir.path) == 9_000)
        // What ServerBackup writes: the end after the beginning.
        let data = TempDir()
        let store = ServerStore(root: data.path)
        try store.create()
        let report = try ServerBackup.run(store, to: dir.file("real"), now: 20_000)
        #expect(report.createdAt == 20_000 && report.finishedAt == 20_000 + report.seconds)
        #expect(ServerConditions.newestBackup(in: dir.path) == report.finishedAt)
    }
}
