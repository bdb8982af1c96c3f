import HealthProbeArchive

/// A bundle being verified and applied while its parts arrive (`SyncServer.startArriving`):
/// the hand-off its parts go through, and the chain its header names, which the device
/// claimed for it (`bound`: the claim bound the chain now, so a refusal releases it).
struct ArrivingApply: Sendable {
    let lines: ArrivingLines
    let device: DeviceRegistry.Identity
    let chain: String
    let bound: Bool

    /// How the apply ended, and how long it ran.
    struct Ended: Sendable {
        let apply: ArrivingApply
        let result: Result<BundleApplier.Outcome, any Error>
        let seconds: Double
    }
}
