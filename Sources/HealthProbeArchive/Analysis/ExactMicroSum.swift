/// An exact sum of micro-units (`Aggregates.micro`) that never traps: the terms are added
/// into a 64-bit sum that wraps, and the wraps are counted, so the result is exact and does
/// not depend on the order of the terms, as `hp_exact_micro_sum` sums in SQL. `value` is
/// nil when the sum is beyond 64 bits, or a term was (nil): such a sum is absent.
struct ExactMicroSum: Equatable {
    private var wrapped: Int64 = 0
    /// The sum is `wrapped + wraps * 2^64`.
    private var wraps = 0
    private var beyond = false

    init() {}

    /// A sum holding `micro` (nil: a term beyond 64 bits).
    init(_ micro: Int64?) { add(micro) }

    mutating func add(_ micro: Int64?) {
        guard let micro else { beyond = true; return }
        let (s, overflow) = wrapped.addingReportingOverflow(micro)
        wrapped = s
        if overflow { wraps += micro < 0 ? -1 : 1 }
    }

    mutating func subtract(_ micro: Int64?) {
        guard let micro else { beyond = true; return }
        let (s, overflow) = wrapped.subtractingReportingOverflow(micro)
        wrapped = s
        if overflow { wraps += micro < 0 ? 1 : -1 }
    }

    mutating func add(_ other: ExactMicroSum) {
        if other.beyond { beyond = true }
        add(other.wrapped)
        wraps += other.wraps
    }

    /// The sum in micro-units; nil beyond 64 bits.
    var value: Int64? { beyond || wraps != 0 ? nil : wrapped }

    /// The sum in the values' unit (as SQL divides `hp_exact_micro_sum` by the scale); nil beyond 64 bits.
    var total: Double? { value.map { Double($0) / Aggregates.sumScale } }
}
