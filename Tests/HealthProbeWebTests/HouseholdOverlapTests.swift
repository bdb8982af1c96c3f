import Foundation
import Testing
import HealthProbeProtocol
import HealthProbeServer
import HealthProbeSimulator
import HealthProbeTestSupport
@testable import HealthProbeWeb

/// The all-chains chart's "identical records" notes come from one merge over every chain of
/// the server, computed ahead of the first view, and each viewer sees only the pairs of
/// chains they may read.
@Suite("Household overlaps", .serialized)
struct HouseholdOverlapTests {
    @Test("one merge over every chain answers each viewer with the pairs of the chains shown (the same counts as a merge over those alone); the warmer computes every shared type ahead")
    func pairsForEachViewer() async throws {
        try await withHousehold { h in
            var h = h
            let types = [SimulatedType.all[1], SimulatedType.all[10]]
            // ann's watch and cat's phone hold the same records as ann's phone.
            for (device, person) in [("ann-watch", "ann"), ("cat-phone", "cat")] {
                h.chains[device] = try await h.sync(device: device, person: person) { try $0.simulate(seed: 3, days: [5, 1], types: types) }
            }
            let (annPhone, annWatch, catPhone) = (h.chains["ann-phone"]!, h.chains["ann-watch"]!, h.chains["cat-phone"]!)
            let q = try h.queries()
            let type = types[0].identifier
            #expect(try q.warmOverlaps() == 2, "both types are held by several chains")

            let all = try #require(try q.householdOverlaps(type: type))
            #expect(all == (try HouseholdSummary.overlaps(h.store, chains: try h.store.chains(), type: type)))
            let sharing = Set(all.filter { $0.identicalStrictFingerprints > 0 }.map { Set($0.chains) })
            #expect(sharing == [[annPhone, annWatch], [annPhone, catPhone], [annWatch, catPhone]])

            // A viewer shown two chains gets their pair only, counted as a merge over them alone would.
            let two = try q.across([annPhone, catPhone], type: type, from: nil, to: nil)
            let alone = try HouseholdSummary.overlaps(h.store, chains: [annPhone, catPhone], type: type).filter { $0.identicalStrictFingerprints > 0 }
            #expect(two.overlaps.map { Set($0.chains) } == [[annPhone, catPhone]])
            #expect(two.overlaps.map(\.identicalRecords) == alone.map(\.identicalStrictFingerprints))
            #expect(try q.across([catPhone], type: type, from: nil, to: nil).overlaps.isEmpty)

            // Through the pages: cat reads only her chain and sees no pair; ann sees them.
            let cat = h.browser()
            _ = try await cat.signIn("cat", Household.password)
            let catPage = try await cat.request("GET", "/types/\(type)")
            #expect(catPage.status == 200 && !catPage.body.contains("identical record"))
            let ann = h.browser()
            _ = try await ann.signIn("ann", Household.password)
            let annPage = try await ann.request("GET", "/types/\(type)")
            #expect(annPage.status == 200 && annPage.body.contains("identical record"))
        }
    }
}
