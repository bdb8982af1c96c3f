import Foundation
import Testing
import HealthProbeCanonical
import HealthProbeProtocol
import HealthProbeServer
import HealthProbeSimulator
import HealthProbeTestSupport
@testable import HealthProbeWeb

/// The all-chains page shows the last count of shared records rather than wait for a new
/// merge over every chain: while the warmer runs, a count made before a sync is shown (and
/// said to be), a type being counted is never counted twice at once, and without the warmer
/// a page counts again itself.
@Suite("Household overlaps: the count shown", .serialized)
struct OverlapAnswersTests {
    @Test("after a new chain syncs, the warmer's last count is shown as counted before the latest sync, then counted again; a type being counted is 'being counted', never counted twice; without the warmer a page counts again")
    func lastCountShown() async throws {
        try await withHousehold { h in
            var h = h
            let types = [SimulatedType.all[1]]
            let type = types[0].identifier
            h.chains["ann-watch"] = try await h.sync(device: "ann-watch", person: "ann") { try $0.simulate(seed: 3, days: [5, 1], types: types) }
            let annPhone = h.chains["ann-phone"]!, annWatch = h.chains["ann-watch"]!
            let answers = OverlapAnswers()
            let q = DashboardQueries(store: h.store, registry: try h.store.registry(), cache: ResultCache(), overlapAnswers: answers)
            answers.setWarmerRunning(true)
            #expect(try q.warmOverlaps() >= 1)
            let first = try q.across([annPhone, annWatch], type: type, from: nil, to: nil)
            #expect(first.overlapsCurrent && first.overlapsCountedAt.flatMap(CanonicalDate.parse) != nil)
            #expect(first.overlaps.map { Set($0.chains) } == [[annPhone, annWatch]])
            #expect(PageRoutesNote.note(first) == nil)

            // A third chain with the same records syncs: the count shown is the last one, said to be older.
            h.chains["ann-tablet"] = try await h.sync(device: "ann-tablet", person: "ann") { try $0.simulate(seed: 3, days: [5, 1], types: types) }
            let annTablet = h.chains["ann-tablet"]!
            let stale = try q.across([annPhone, annWatch, annTablet], type: type, from: nil, to: nil)
            #expect(!stale.overlapsCurrent && stale.overlapsCountedAt == first.overlapsCountedAt)
            #expect(stale.overlaps == first.overlaps, "the last count, not a new one")
            #expect(PageRoutesNote.note(stale)?.contains("before the latest sync") == true)
            // The warmer's next round counts again: every pair of the three.
            _ = try q.warmOverlaps()
            let again = try q.across([annPhone, annWatch, annTablet], type: type, from: nil, to: nil)
            #expect(again.overlapsCurrent && again.overlaps.count == 3)

            // A type being counted is not counted a second time: the page says it is being counted.
            let busy = OverlapAnswers()
            let q2 = DashboardQueries(store: h.store, registry: try h.store.registry(), cache: ResultCache(), overlapAnswers: busy)
            #expect(busy.startCounting(type))
            #expect(!busy.startCounting(type))
            #expect(try q2.householdOverlaps(type: type) == nil)
            let counting = try q2.across([annPhone, annWatch], type: type, from: nil, to: nil)
            #expect(counting.overlaps.isEmpty && counting.overlapsCountedAt == nil && !counting.overlapsCurrent)
            #expect(PageRoutesNote.note(counting)?.contains("being counted") == true)
            busy.finishCounting(type, nil)

            // Without the warmer, a page counts again itself when a chain has synced since.
            let alone = OverlapAnswers()
            let q3 = DashboardQueries(store: h.store, registry: try h.store.registry(), cache: ResultCache(), overlapAnswers: alone)
            _ = try q3.across([annPhone, annWatch], type: type, from: nil, to: nil)
            h.chains["cat-watch"] = try await h.sync(device: "cat-watch", person: "cat") { try $0.simulate(seed: 3, days: [5, 1], types: types) }
            let fresh = try q3.across([annPhone, annWatch, h.chains["cat-watch"]!], type: type, from: nil, to: nil)
            #expect(fresh.overlapsCurrent && fresh.overlaps.count == 3)
        }
    }
}

/// The page's note, as the all-chains route makes it.
enum PageRoutesNote {
    static func note(_ across: Dashboard.TypeAcross) -> String? { WebServer.overlapNote(across, now: Date().timeIntervalSince1970) }
}
