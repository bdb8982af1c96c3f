import Foundation

/// How often the alert service verifies each chain (`hp-server verify` without an admin):
/// quick every `quickEvery` seconds, full every `fullEvery`.
public struct ScheduledVerify: Sendable {
    public var store: ServerStore
    public var quickEvery: Double
    public var fullEvery: Double

    public init(store: ServerStore, quickEvery: Double = 86400, fullEvery: Double = 7 * 86400) {
        self.store = store
        self.quickEvery = quickEvery
        self.fullEvery = fullEvery
    }
}
