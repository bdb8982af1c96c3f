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
    /// The type every device here holds the same records of.
    static let types = [SimulatedType.all[1]]

    /// ann's watch syncs the records ann's phone holds too.
    static func syncAnnWatch(_ h: inout Household) async throws {
        h.chains["ann-watch"] = try await h.sync(device: "ann-watch", person: "ann") { try $0.simulate(seed: 3, days: [5, 1], types: types) }
    }

    @Test("after a chain syncs, the warmer's last count is shown as counted before the latest sync (to those shown that chain), then counted again; a failed recount is said; with the warmer a page never counts; a type is never counted twice at once; without the warmer a page counts again")
    func lastCountShown() async throws {
        try await withHousehold { h in
            var h = h
            let (types, type) = (Self.types, Self.types[0].identifier)
            try await Self.syncAnnWatch(&h)
            let annPhone = h.chains["ann-phone"]!, annWatch = h.chains["ann-watch"]!
            let answers = OverlapAnswers()
            let q = try h.queries(answers)
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
            // Someone shown only the two chains that did not sync sees a current count: another
            // chain's sync is not theirs to see.
            let theirs = try q.across([annPhone, annWatch], type: type, from: nil, to: nil)
            #expect(theirs.overlapsCurrent && PageRoutesNote.note(theirs) == nil)
            // The warmer's next round counts again: every pair of the three.
            _ = try q.warmOverlaps()
            let again = try q.across([annPhone, annWatch, annTablet], type: type, from: nil, to: nil)
            #expect(again.overlapsCurrent && again.overlaps.count == 3)
            // A failed count again: the older count stays, said to have failed to be counted again.
            answers.countFailed(type)
            let failed = try q.across([annPhone, annWatch, annTablet], type: type, from: nil, to: nil)
            #expect(failed.overlapsCountFailed && failed.overlaps == again.overlaps)
            #expect(PageRoutesNote.note(failed)?.contains("counting them again failed") == true)

            // While the warmer runs, a page with no count yet neither counts nor waits: "being counted".
            let fresh = OverlapAnswers()
            fresh.setWarmerRunning(true)
            let qf = try h.queries(fresh)
            let notYet = try qf.across([annPhone, annWatch], type: type, from: nil, to: nil)
            #expect(notYet.overlaps.isEmpty && notYet.overlapsCountedAt == nil && !notYet.overlapsCurrent)
            #expect(fresh.answer(type) == nil, "the page counted")
            #expect(PageRoutesNote.note(notYet)?.contains("being counted") == true)
            // One chain shown has no pair: nothing to count or say.
            let one = try qf.across([annPhone], type: type, from: nil, to: nil)
            #expect(one.overlaps.isEmpty && one.overlapsCurrent && PageRoutesNote.note(one) == nil)

            // A type being counted is not counted a second time, whoever asks.
            let busy = OverlapAnswers()
            let q2 = try h.queries(busy)
            let key = try q2.overlapKey(type: type)
            guard case .start = busy.startCounting(type, key: key.text) else { Issue.record("the first caller may count"); return }
            guard case .underWay = busy.startCounting(type, key: key.text) else { Issue.record("a second count started"); return }
            #expect(try q2.householdOverlaps(type: type) == nil)
            let counting = try q2.across([annPhone, annWatch], type: type, from: nil, to: nil)
            #expect(counting.overlaps.isEmpty && counting.overlapsCountedAt == nil && !counting.overlapsCurrent)
            busy.finishCounting(type, nil)
            // Once one is kept for the key, asking again finds it.
            #expect(try q2.householdOverlaps(type: type)?.isEmpty == false)
            guard case .current = busy.startCounting(type, key: key.text) else { Issue.record("the kept count was not found"); return }

            // Without the warmer, a page counts again itself when a chain has synced since.
            let alone = OverlapAnswers()
            let q3 = try h.queries(alone)
            _ = try q3.across([annPhone, annWatch], type: type, from: nil, to: nil)
            h.chains["cat-watch"] = try await h.sync(device: "cat-watch", person: "cat") { try $0.simulate(seed: 3, days: [5, 1], types: types) }
            let recounted = try q3.across([annPhone, annWatch, h.chains["cat-watch"]!], type: type, from: nil, to: nil)
            #expect(recounted.overlapsCurrent && recounted.overlaps.count == 3)
        }
    }

    @Test("counts kept in the cache file outlive a restart: shown at once and current, so the warmer does not count again; a damaged file is ignored")
    func keptAcrossRestart() async throws {
        try await withHousehold { h in
            var h = h
            let type = Self.types[0].identifier
            try await Self.syncAnnWatch(&h)
            let shown = [h.chains["ann-phone"]!, h.chains["ann-watch"]!]
            let file = h.store.root + "/cache/overlaps-test.json"
            let first = OverlapAnswers(file: file)
            first.setWarmerRunning(true)
            #expect(try h.queries(first).warmOverlaps() >= 1)
            let counted = try h.queries(first).across(shown, type: type, from: nil, to: nil)
            #expect(counted.overlapsCurrent && !counted.overlaps.isEmpty)

            // A new server process on the same data directory.
            let second = OverlapAnswers(file: file)
            second.setWarmerRunning(true)
            #expect(second.answer(type) == first.answer(type))
            let afterRestart = try h.queries(second).across(shown, type: type, from: nil, to: nil)
            #expect(afterRestart == counted, "shown at once, as counted before the restart")
            guard case .current = second.startCounting(type, key: try h.queries(second).overlapKey(type: type).text) else {
                Issue.record("the warmer would count again what the file holds"); return
            }

            // A damaged or foreign file is a cache miss, never an error.
            for junk in ["{", "{\"\(type)\": {\"key\": \"k\", \"sequences\": {}, \"countedAt\": 1, \"pairs\": [{\"chains\": [\"a\"], \"typeIdentifier\": \"\(type)\", \"identicalStrictFingerprints\": -4}]}}"] {
                try Data(junk.utf8).write(to: URL(fileURLWithPath: file))
                #expect(OverlapAnswers(file: file).answer(type) == nil)
            }
        }
    }
}

/// The page's note, as the all-chains route makes it.
enum PageRoutesNote {
    static func note(_ across: Dashboard.TypeAcross) -> String? { WebServer.overlapNote(across, now: Date().timeIntervalSince1970) }
}
