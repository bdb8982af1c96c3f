import Foundation

/// Display units of the same dimension are converted to one canonical unit
/// before hashing, so a display-setting change (kJ vs kcal, mi vs km) does not
/// look like a changed sample. Values are rounded to 12 significant digits
/// after conversion. See docs/decisions/2026-11-22-import-units.md.
enum UnitCanon {
    /// unit -> (canonical unit, factor); value_canonical = value * factor.
    static let table: [String: (String, Double)] = [
        // energy
        "kcal": ("kcal", 1), "Cal": ("kcal", 1), "cal": ("kcal", 0.001), "kJ": ("kcal", 1 / 4.184), "J": ("kcal", 1 / 4184),
        // length
        "m": ("m", 1), "km": ("m", 1000), "cm": ("m", 0.01), "mm": ("m", 0.001), "mi": ("m", 1609.344),
        "ft": ("m", 0.3048), "yd": ("m", 0.9144), "in": ("m", 0.0254),
        // mass
        "kg": ("kg", 1), "g": ("kg", 0.001), "mg": ("kg", 1e-6), "lb": ("kg", 0.45359237), "oz": ("kg", 0.028349523125), "st": ("kg", 6.35029318),
        // volume
        "mL": ("mL", 1), "L": ("mL", 1000), "dL": ("mL", 100), "fl_oz_us": ("mL", 29.5735295625), "fl_oz_imp": ("mL", 28.4130625),
        "cup_us": ("mL", 236.5882365), "cup_imp": ("mL", 284.130625),
        // speed
        "m/s": ("m/s", 1), "km/hr": ("m/s", 1 / 3.6), "mi/hr": ("m/s", 0.44704),
        // blood glucose
        "mg/dL": ("mg/dL", 1),
    ]

    /// Canonical (value, unit) for a raw value and unit.
    static func canonical(_ value: Double, _ unit: String?) -> (Double, String?) {
        guard let unit else { return (value, nil) }
        if let (u, f) = table[unit] { return (round12(value * f), u) }
        if unit == "degF" { return (round12((value - 32) * 5 / 9), "degC") }
        if unit == "K" { return (round12(value - 273.15), "degC") }
        if unit == "degC" { return (value, "degC") }
        // mmol<molar mass>/L -> mg/dL using the molar mass Apple writes in the unit.
        if unit.hasPrefix("mmol<"), unit.hasSuffix(">/L"),
           let mass = Double(unit.dropFirst(5).dropLast(3)) {
            return (round12(value * mass / 10), "mg/dL")
        }
        return (value, unit)
    }

    static func round12(_ x: Double) -> Double {
        guard x != 0, x.isFinite else { return x }
        let digits = 12 - Int(floor(log10(abs(x)))) - 1
        let scale = pow(10, Double(digits))
        let r = (x * scale).rounded() / scale
        return r.isFinite ? r : x
    }
}
