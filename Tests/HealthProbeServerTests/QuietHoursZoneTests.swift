import Foundation
import GRDB
import NIOConcurrencyHelpers
import Testing
@testable import HealthProbeServer
import HealthProbeTestSupport

/// Quiet hours on the clock of a person's IANA time zone, daylight saving time followed:
/// evaluated on the injected clock across the changes of 2026 in Europe/Berlin.
@Suite("Quiet hours in a time zone")
struct QuietHoursZoneTests {
    // 2026-03-29 01:00Z: Berlin goes from 02:00 CET (+1) to 03:00 CEST (+2); 2026-10-25 01:00Z back.
    let berlin = QuietHours(start: 22 * 60, end: 7 * 60, zone: "Europe/Berlin")!

    @Test("22:00-07:00 Europe/Berlin ends at 07:00 local: 06:00Z in winter, 05:00Z on the spring-forward night, 06:00Z again on the fall-back night")
    func endsOnTheLocalClock() throws {
        #expect(berlin.end(after: 1_774_729_800) == nil, "2026-03-28 21:30 CET: before the window")
        #expect(berlin.end(after: 1_774_733_400) == 1_774_760_400, "22:30 CET ends at 07:00 CEST = 05:00Z, after the change")
        #expect(berlin.end(after: 1_774_738_800) == 1_774_760_400, "00:00 CET")
        #expect(berlin.end(after: 1_774_760_399) == 1_774_760_400, "06:59:59 CEST")
        #expect(berlin.end(after: 1_774_760_400) == nil, "07:00 CEST: over")
        #expect(berlin.end(after: 1_782_937_800) == 1_782_968_400, "summer: 22:30 CEST ends 05:00Z")
        #expect(berlin.end(after: 1_792_873_800) == 1_792_908_000, "2026-10-24 22:30 CEST ends at 07:00 CET = 06:00Z, after falling back")
        #expect(berlin.end(after: 1_792_904_400) == 1_792_908_000, "06:00 CET, an hour before the end")
        // UTC (the default) as before the zone existed.
        let utc = try #require(QuietHours(start: 22 * 60, end: 7 * 60))
        #expect(utc.zone == "UTC" && utc.end(after: 82_800) == 111_600)
        // A window ending at a time the spring-forward night skips (02:30) ends at 03:00 CEST.
        let skipped = try #require(QuietHours(start: 60, end: 150, zone: "Europe/Berlin"))
        #expect(skipped.end(after: 1_774_744_200) == 1_774_746_000)
    }

    @Test("zones are IANA names Foundation knows; anything else is refused")
    func zonesChecked() {
        #expect(QuietHours(start: 0, end: 60, zone: "America/New_York")?.zone == "America/New_York")
        for bad in ["", "Mars/Olympus_Mons", "Europe/Berlin; DROP TABLE", String(repeating: "A", count: 65), "../../etc/passwd", "Europe/Berlin\n"] {
            #expect(QuietHours(start: 0, end: 60, zone: bad) == nil, "\(bad)")
        }
        #expect(QuietHours(start: 0, end: 60, zone: "Europe/Berlin")?.end(after: .nan) == nil)
        #expect(QuietHours(start: 0, end: 60, zone: "Europe/Berlin")?.end(after: 1e300) == nil)
    }

    @Test("a message queued at 00:00 CET on the spring-forward night waits until 07:00 CEST (05:00Z), then goes out once; the zone is kept in the registry")
    func deliveryAcrossTheChange() async throws {
        let dir = TempDir()
        let receiver = AlertReceiver()
        try await receiver.start()
        let t = AlertTests()
        let (r, secrets) = try t.household(dir, receiver: receiver)
        try r.setQuietHours(person: "bob", berlin)
        #expect(try r.quietHours(person: "bob") == berlin)
        let time = NIOLockedValueBox(1_774_738_800.0)
        let alerts = t.service(r, time: time, cadence: 1e9)
        try r.recordSync(chain: t.ownChain, now: 1_774_738_000, clockOffset: nil)
        try r.recordRefusal(chain: t.ownChain, code: "divergent", detail: "", now: 1_774_738_700)
        #expect(try alerts.evaluate().queued == 2, "evaluated and queued in quiet hours")
        #expect(try await t.sent(alerts) == [1, 0], "ann has no quiet hours")
        time.withLockedValue { $0 = 1_774_760_399 }
        #expect(try await t.sent(alerts) == [0, 0], "06:59:59 CEST: bob's still wait")
        time.withLockedValue { $0 = 1_774_760_400 }
        #expect(try await t.sent(alerts) == [1, 0])
        let got = try t.checkedDeliveries(receiver, secrets: secrets)
        #expect(got["bob"]?.count == 1 && got["ann"]?.count == 1)
        try await receiver.stop()
    }

    @Test("migration v11 adds the zone: quiet hours set before it read as UTC")
    func migration() throws {
        let dir = TempDir()
        let r = try DeviceRegistry(path: dir.path + "/server.sqlite")
        try r.addPerson(name: "bob", role: .member, password: nil, now: 1)
        let q = try DatabaseQueue(path: dir.path + "/server.sqlite")
        try q.write { db in
            #expect(try Row.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations").map { $0[0] as String }.contains("v11 quiet hours zone"))
            try db.execute(sql: "INSERT INTO alert_quiet_hours(person_id, start_minute, end_minute) SELECT id, 60, 120 FROM people WHERE name = 'bob'")
        }
        #expect(try r.quietHours(person: "bob") == QuietHours(start: 60, end: 120, zone: "UTC"))
    }
}
