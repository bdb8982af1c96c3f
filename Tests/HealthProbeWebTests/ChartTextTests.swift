import Testing
@testable import HealthProbeWeb

/// The chart's own number and text writers (used for every coordinate and title of an SVG).
@Suite("Chart coordinates and escaping")
struct ChartTextTests {
    @Test("coordinates have one decimal, rounded, with a sign only when not zero; text is escaped for XML, and left as it is when it needs none")
    func coordinatesAndEscaping() {
        #expect(Chart.fmt(208) == "208.0")
        #expect(Chart.fmt(12.34) == "12.3")
        #expect(Chart.fmt(199.96) == "200.0")
        #expect(Chart.fmt(0.04) == "0.0")
        #expect(Chart.fmt(-0.04) == "0.0")
        #expect(Chart.fmt(-2.5) == "-2.5")
        #expect(Chart.fmt(0.25) == "0.3")
        #expect(Chart.fmt(.nan) == "nan")
        #expect(Chart.escape("Heart rate: 5 Jun, 72 bpm") == "Heart rate: 5 Jun, 72 bpm")
        #expect(Chart.escape("a<b & \"c\" 'd'>") == "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;")
        #expect(Chart.escape("Zoë's ⌚ <3") == "Zoë&#39;s ⌚ &lt;3")
        // A quote or bracket followed by a combining mark (one Character) is escaped all the same.
        #expect(Chart.escape("a\"\u{301} b<\u{338}") == "a&quot;\u{301} b&lt;\u{338}")
    }
}
