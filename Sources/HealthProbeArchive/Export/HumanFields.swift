import HealthProbeCanonical

/// Format version 2's human fields of one type's records, made once per type
/// (`TypeCatalogue`): the display name and unit as canonical JSON values and as CSV
/// cells, so a record costs a copy of bytes, not a lookup. An unknown type's name is
/// its identifier and its unit null.
struct HumanFields {
    /// `"Heart rate"` (JSON string text).
    let nameJSON: [UInt8]
    /// `"beats/min"` or `null`.
    let unitJSON: [UInt8]
    /// The name as a CSV cell (quoted when it needs to be).
    let nameCell: [UInt8]
    /// The unit as a CSV cell; empty when there is none.
    let unitCell: [UInt8]

    init(typeIdentifier: String) {
        let info = TypeCatalogue.info(typeIdentifier)
        var w = CanonicalJSONWriter(capacity: 128)
        w.writeString(info.name)
        nameJSON = w.bytes
        w.reset()
        if let unit = info.unit { w.writeString(unit) } else { w.writeNull() }
        unitJSON = w.bytes
        nameCell = Array(CSV.field(info.name).utf8)
        unitCell = info.unit.map { Array(CSV.field($0).utf8) } ?? []
    }
}

extension TypeInfo {
    /// Format 2's human members of an item of this type: `display_name`, `display_unit`
    /// and, with `statistic`, how a day of the type is summed up (`type_summary` items).
    func humanMembers(statistic withStatistic: Bool = false) -> [String: JSONValue] {
        var m: [String: JSONValue] = ["display_name": .string(name), "display_unit": .optional(unit)]
        if withStatistic { m["statistic"] = .string(statistic.rawValue) }
        return m
    }
}

/// The local day (`YYYY-MM-DD`) of one start date after another in a zone, asking the
/// calendar only when a date leaves the day found last (records come sorted by start).
struct LocalDayCursor {
    /// Nil when the archive does not know the zone: no local day.
    let days: LocalDays?
    private var start = 0.0, next = 0.0
    private(set) var text: [UInt8] = []

    init(days: LocalDays?) { self.days = days }

    /// The local day holding `seconds`, nil when the zone is unknown.
    mutating func day(_ seconds: Double) -> [UInt8]? {
        guard let days else { return nil }
        if !(seconds >= start && seconds < next) {
            start = days.dayStart(seconds)
            next = days.nextDayStart(start)
            if !(next > start) { next = start + 86_400 }
            text = Array(days.date(start).utf8)
        }
        return text
    }
}
