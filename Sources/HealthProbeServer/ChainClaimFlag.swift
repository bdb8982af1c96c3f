import Synchronization

/// Whether the claim a bundle made of its chain inside its apply, just before the commit
/// (`SyncServer.claimInTurn`), bound the chain: a refusal after it lets go of that binding.
final class ChainClaimFlag: Sendable {
    private let bound = Mutex(false)

    func setBound() { bound.withLock { $0 = true } }
    var isBound: Bool { bound.withLock { $0 } }
}
