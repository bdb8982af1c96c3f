import Prometheus

/// Alert counters: evaluation rounds, events by kind, deliveries by result (counts only).
extension ServerMetrics {
    static var alertEventsName: MetricNameDescriptor { name("alert_events", "total", "Alert state changes told, by event.") }
    static var alertDeliveriesName: MetricNameDescriptor { name("alert_deliveries", "total", "Alert message delivery attempts, by result.") }

    func alertRound(_ round: DeviceRegistry.AlertRound) {
        registry.makeCounter(descriptor: Self.name("alert_evaluations", "total", "Alert evaluation rounds.")).increment()
        for kind in [AlertEvent.Kind.fired, .reminder, .resolved] {
            let n = round.events.filter { $0.event == kind }.count
            registry.makeCounter(descriptor: Self.alertEventsName, labels: [("event", kind.rawValue)]).increment(by: Int64(n))
        }
    }

    func alertDeliveries(delivered: Int, failed: Int) {
        registry.makeCounter(descriptor: Self.alertDeliveriesName, labels: [("result", "delivered")]).increment(by: Int64(delivered))
        registry.makeCounter(descriptor: Self.alertDeliveriesName, labels: [("result", "failed")]).increment(by: Int64(failed))
    }
}
