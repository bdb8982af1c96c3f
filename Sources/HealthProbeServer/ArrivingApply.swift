import HealthProbeArchive

/// A bundle being verified and applied while its parts arrive (`SyncServer.startArriving`):
/// the hand-off its parts go through, and the chain its header names.
struct ArrivingApply: Sendable {
    let lines: ArrivingLines
    let chain: String
    /// Whether the claim inside the apply, before its commit, bound the chain.
    let claimedInTurn = ChainClaimFlag()

    /// The claim of the chain at `BUNDLE_END`: whether it bound the chain now (a refusal
    /// then releases it), or why the device may not write it.
    struct Claim: Sendable {
        let bound: Bool
        let failure: (any Error)?
    }

    /// How the apply ended, how long it ran, and the claim made at the end.
    struct Ended: Sendable {
        let apply: ArrivingApply
        let result: Result<BundleApplier.Outcome, any Error>
        let seconds: Double
        var claim = Claim(bound: false, failure: nil)

        func claimed(_ claim: Claim) -> Ended {
            var e = self
            e.claim = claim
            return e
        }
    }
}
