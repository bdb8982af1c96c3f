import Foundation
import HealthProbeArchive
import HealthProbeCanonical

extension Dashboard {
    /// A record that disappeared, as a person reads it: the type's name, the device's local
    /// time, the value with its unit, the writing app, and why it counts as gone.
    public struct DisappearedRow: Codable, Sendable, Equatable {
        public var sampleID: Int64
        public var typeIdentifier: String
        public var typeName: String
        /// `YYYY-MM-DD HH:mm` in the device's zone (`zone`), and the exact UTC start.
        public var localTime: String
        public var start: String
        public var value: String
        public var source: String?
        public var evidence: String
        public var why: String
    }

    /// A page of the records that disappeared at an observation.
    public struct DisappearedPage: Codable, Sendable, Equatable {
        public var chain: String
        public var observationID: Int64
        public var typeIdentifier: String?
        /// The zone the local times are in.
        public var zone: String
        public var records: [DisappearedRow]
        /// The sample id to continue after; nil at the end.
        public var nextAfter: Int64?
    }
}

extension DashboardQueries {
    /// Why a disappearance counts, in words.
    static func why(_ evidence: String) -> String {
        switch evidence {
        case "full_scan_absent": "a complete read no longer returned it"
        case "hk_deleted_object": "Apple Health reported it deleted"
        default: "the device reported it gone"
        }
    }

    /// A category state in words (`TypeCatalogue.stateName`).
    static func category(_ type: String, _ value: Int64) -> String { TypeCatalogue.stateName(type, value) }

    /// The app and device that wrote a record, as people name them: Apple's own apps by
    /// name, a device model with its family ("Apple Watch (Watch6,1)").
    static func source(bundle: String?, product: String?) -> String? {
        var app = bundle
        if let b = bundle, b == "com.apple.health" || b.hasPrefix("com.apple.health.") { app = "Apple Health" }
        var device = product
        if let p = product {
            for (prefix, family) in [("Watch", "Apple Watch"), ("iPhone", "iPhone"), ("iPad", "iPad")] where p.hasPrefix(prefix) {
                device = "\(family) (\(p))"
            }
        }
        let parts = [app, device].compactMap { $0 }.filter { !$0.isEmpty }
        return parts.isEmpty ? nil : parts.joined(separator: " on ")
    }

    /// A value with the unit people read (the catalogue's name for the archive's unit).
    static func shown(_ r: DisappearedRecord) -> String {
        if let n = r.numericValue {
            let unit = TypeCatalogue.info(r.typeIdentifier).unit ?? r.unit
            return (ECMAScriptNumber.format(n) ?? "?") + (unit.map { " " + $0 } ?? "")
        }
        if let c = r.categoryValue { return category(r.typeIdentifier, c) + ", \(Int(((r.endDate - r.startDate) / 60).rounded())) min" }
        return "-"
    }

    /// A page of the records that disappeared at observation `id`, of `type` when given.
    func disappeared(_ chain: String, id: Int64, type: String?, after: Int64?) throws -> Dashboard.DisappearedPage {
        try readers.read(chain) { db in
            guard try ObservationQueries.exists(db, id: id) else { throw WebError(.notFound, "no observation \(id) in this chain") }
            let zone = try LocalDays.of(db, observation: id)
            let rows = try DisappearedRecords.page(db, observation: id, type: type, after: after ?? 0, limit: Self.recordsPage + 1)
            let page = rows.prefix(Self.recordsPage).map { r in
                Dashboard.DisappearedRow(sampleID: r.sampleID, typeIdentifier: r.typeIdentifier, typeName: TypeCatalogue.name(r.typeIdentifier),
                                         localTime: zone.time(r.startDate), start: CanonicalDate.string(r.startDate), value: Self.shown(r),
                                         source: Self.source(bundle: r.sourceBundle, product: r.sourceProduct), evidence: r.evidence, why: Self.why(r.evidence))
            }
            return Dashboard.DisappearedPage(chain: chain, observationID: id, typeIdentifier: type, zone: zone.zoneName, records: Array(page),
                                             nextAfter: rows.count > Self.recordsPage ? page.last?.sampleID : nil)
        }
    }
}
