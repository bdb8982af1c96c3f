extension Duration {
    /// The duration in seconds (acknowledgement and apply times in reports and metrics).
    package var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
