import HealthProbeArchive
import Synchronization

/// One open archive per home for the whole `hp-node serve` process: a writer holds an
/// exclusive lock on its archive, so the endpoint, the watched folder and sync share the
/// one they opened first (its database serializes their writes).
public final class OpenArchives: Sendable {
    private let open = Mutex<[String: NodeArchive]>([:])

    public init() {}

    /// The archive of `home`, opened (and created) on first use.
    public func node(_ home: ArchiveHome) throws -> NodeArchive {
        try open.withLock { m throws -> NodeArchive in
            if let n = m[home.root] { return n }
            let n = try home.open()
            m[home.root] = n
            return n
        }
    }
}
