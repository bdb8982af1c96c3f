import HealthProbeCanonical

extension HouseholdSummary.Report {
    /// The `HOUSEHOLD` reply, every member checked (Protocol/README.md section 2.2).
    public init(wire frame: SyncFrame) throws { self = try HouseholdReply.report(frame) }
}

/// Decodes the `HOUSEHOLD` reply as `HouseholdSummary.wireJSON` writes it: JSON
/// (RFC 8259; not canonical: Foundation's encoder writes it), exactly the members of
/// `HouseholdSummary.Report` and its parts (an optional one may be absent or null),
/// chain ids 64 lower-case hex, counts 0...2^53-1, dates and clock offsets inside
/// `SyncLimits`, strings and arrays bounded. A violation is `malformed_frame` naming
/// the member (`HOUSEHOLD.chains[3].visible: ...`).
enum HouseholdReply {
    static let maxChains = 10_000
    /// Types in one `visible` or `householdSumOfChains` object.
    static let maxTypes = 10_000
    /// Daily rows of one chain (a row per local day and source revision).
    static let maxDailyRows = 200_000
    static let maxSharedSources = 1_000_000
    /// A daily row's source revision: bundle identifier, product type and version, each at most 1024 bytes.
    static let maxSourceRevisionBytes = 4096

    static func report(_ frame: SyncFrame) throws -> HouseholdSummary.Report {
        let f = try PayloadFields(frame, name: "HOUSEHOLD", members: ["chains", "householdSumOfChains", "possiblySharedSources"], canonical: false)
        var chains: [HouseholdSummary.Chain] = []
        var ids = Set<String>()
        for (i, v) in try f.array("chains", maxCount: maxChains).enumerated() {
            let c = try chain(v, "HOUSEHOLD.chains[\(i)]")
            guard ids.insert(c.chain).inserted else { throw SyncProtocolError(.malformedFrame, "HOUSEHOLD.chains[\(i)].chain: appears twice") }
            chains.append(c)
        }
        let sums = try f.counts("householdSumOfChains", maxCount: maxTypes)
        let shared = try f.array("possiblySharedSources", maxCount: maxSharedSources).enumerated().map { i, v in
            try sharedSources(v, "HOUSEHOLD.possiblySharedSources[\(i)]", chains: ids)
        }
        return HouseholdSummary.Report(chains: chains, householdSumOfChains: sums, possiblySharedSources: shared)
    }

    static func chain(_ v: JSONValue, _ name: String) throws -> HouseholdSummary.Chain {
        let optional: Set<String> = ["clockOffsetSeconds", "deviceName", "lastObservationID", "lastObservedAt", "lastSyncAt"]
        let f = try PayloadFields(v, name: name, members: optional.union(["chain", "daily", "visible"]), optional: optional)
        let daily = try f.array("daily", maxCount: maxDailyRows).enumerated().map { i, d in try dailyRow(d, "\(name).daily[\(i)]") }
        return HouseholdSummary.Chain(
            chain: try f.hex("chain", count: 64),
            deviceName: try f.optionalString("deviceName", maxLength: SyncLimits.maxDeviceNameBytes),
            clockOffsetSeconds: try f.optionalNumber("clockOffsetSeconds", in: SyncLimits.clockOffsets),
            // Observation ids: positive and exact, like sequences.
            lastObservationID: try f.optionalInt("lastObservationID", in: SyncLimits.sequences),
            lastObservedAt: try f.optionalSeconds("lastObservedAt", in: SyncLimits.householdDates),
            lastSyncAt: try f.optionalSeconds("lastSyncAt", in: SyncLimits.householdDates),
            visible: try f.counts("visible", maxCount: maxTypes),
            daily: daily)
    }

    static func dailyRow(_ v: JSONValue, _ name: String) throws -> HouseholdSummary.Daily {
        let optional: Set<String> = ["aggregateHash", "sourceRevision", "valueMax", "valueSum"]
        let f = try PayloadFields(v, name: name, members: optional.union(["bucketEnd", "bucketStart", "typeIdentifier", "visibleRecordCount"]), optional: optional)
        let finite = -Double.greatestFiniteMagnitude...Double.greatestFiniteMagnitude
        let start = try f.seconds("bucketStart", in: SyncLimits.householdDates)
        let end = try f.seconds("bucketEnd", in: SyncLimits.householdDates)
        guard end >= start else { throw f.fail("bucketEnd", "is before bucketStart") }
        return HouseholdSummary.Daily(
            typeIdentifier: try f.string("typeIdentifier", maxLength: SyncLimits.maxTypeBytes), bucketStart: start, bucketEnd: end,
            visibleRecordCount: Int(try f.int("visibleRecordCount", in: SyncLimits.counts)),
            valueSum: try f.optionalNumber("valueSum", in: finite), valueMax: try f.optionalNumber("valueMax", in: finite),
            sourceRevision: try f.optionalString("sourceRevision", maxLength: maxSourceRevisionBytes),
            aggregateHash: try f.optionalHex("aggregateHash", count: 64))
    }

    /// A pair of the report's own chains.
    static func sharedSources(_ v: JSONValue, _ name: String, chains ids: Set<String>) throws -> HouseholdSummary.SharedSources {
        let f = try PayloadFields(v, name: name, members: ["chains", "identicalStrictFingerprints", "typeIdentifier"])
        let pair = try f.array("chains", maxCount: 2)
        guard pair.count == 2 else { throw f.fail("chains", "must name exactly two chains") }
        let chains = try pair.enumerated().map { i, c in
            guard case .string(let s) = c, ArchiveHasher.isLowerHex(s.utf8, count: 64) else { throw f.fail("chains[\(i)]", "must be 64 lower-case hex digits") }
            guard ids.contains(s) else { throw f.fail("chains[\(i)]", "is not one of the report's chains") }
            return s
        }
        guard chains[0] != chains[1] else { throw f.fail("chains", "names one chain twice") }
        return HouseholdSummary.SharedSources(chains: chains, typeIdentifier: try f.string("typeIdentifier", maxLength: SyncLimits.maxTypeBytes),
                                              identicalStrictFingerprints: Int(try f.int("identicalStrictFingerprints", in: SyncLimits.counts)))
    }
}

extension PayloadFields {
    /// An object of type identifiers to counts (`visible`, `householdSumOfChains`).
    func counts(_ member: String, maxCount: Int) throws -> [String: Int] {
        var out: [String: Int] = [:]
        for (type, value) in try object(member, maxCount: maxCount) {
            guard type.utf8.count <= SyncLimits.maxTypeBytes else { throw fail(member, "a type longer than \(SyncLimits.maxTypeBytes) bytes") }
            guard case .number(let d) = value, let n = Self.exactInteger(d, in: SyncLimits.counts) else {
                throw fail(member, "the count of \(Self.printable(type)) must be an integer in \(SyncLimits.counts.lowerBound)...\(SyncLimits.counts.upperBound)")
            }
            out[type] = Int(n)
        }
        return out
    }
}
