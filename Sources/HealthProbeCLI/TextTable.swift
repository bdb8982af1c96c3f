/// A plain-text table: left-aligned text, right-aligned numbers.
public struct TextTable {
    public var headers: [String]
    public var rows: [[String]] = []
    public var rightAligned: Set<Int>

    public init(_ headers: [String], rightAligned: Set<Int> = []) {
        self.headers = headers
        self.rightAligned = rightAligned
    }

    public mutating func add(_ row: [String]) { rows.append(row) }

    public func render() -> String {
        var widths = headers.map(\.count)
        for r in rows { for (i, c) in r.enumerated() where i < widths.count { widths[i] = max(widths[i], c.count) } }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { i, c in
                let pad = String(repeating: " ", count: max(0, widths[i] - c.count))
                return rightAligned.contains(i) ? pad + c : c + pad
            }.joined(separator: "  ").trimmingTrailingSpaces()
        }
        var out = [line(headers), widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ")]
        out += rows.map(line)
        return out.joined(separator: "\n")
    }
}

extension String {
    func trimmingTrailingSpaces() -> String {
        var s = self
        while s.last == " " { s.removeLast() }
        return s
    }
}
