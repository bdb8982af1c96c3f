/// Text from a peer made safe to show on a terminal or in a log: at most
/// `maxCharacters` Unicode scalars (then `…`), with control, format, private-use,
/// unassigned and line-separator characters shown as `?` (no escape sequences,
/// no reordering).
public enum ShownText {
    public static func clean(_ text: String, maxCharacters: Int) -> String {
        var out = String.UnicodeScalarView()
        var count = 0
        for scalar in text.unicodeScalars {
            guard count < maxCharacters else {
                out.append("…")
                break
            }
            out.append(isShown(scalar) ? scalar : "?")
            count += 1
        }
        return String(out)
    }

    /// Whether `scalar` is shown as it is.
    static func isShown(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .control, .format, .surrogate, .privateUse, .unassigned, .lineSeparator, .paragraphSeparator: return false
        default: return true
        }
    }
}
