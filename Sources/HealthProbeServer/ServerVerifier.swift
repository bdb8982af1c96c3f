import Foundation
import HealthProbeArchive
import HealthProbeProtocol
import HealthProbeCanonical

/// `hp-server verify`: for each chain, the bundle log's links (no gaps, no
/// forks), every stored bundle re-verified from its bytes (item hashes,
/// manifest hash, chain link), and the replica's integrity.
public enum ServerVerifier {
    public struct ChainReport: Sendable, Codable, Equatable {
        public var chain: String
        public var bundles: Int
        public var checks: [IntegrityCheck]
        public var ok: Bool { !checks.contains { $0.status == .problem } }
    }

    /// `subset` = (n, t): only stored bundles whose sequence is n modulo t (1-based n), to spread work.
    public static func run(_ store: ServerStore, chain: String? = nil, mode: ArchiveVerifier.Mode, subset: (Int, Int)? = nil) throws -> [ChainReport] {
        let chains = try chain.map { [try store.chain(matching: $0)] } ?? store.chains()
        // With no server running, verify settles what a stopped one left (`.incoming` files);
        // beside a running server it moves and deletes nothing: those files are the server's.
        let lock = store.lockIfNotServing()
        defer { withExtendedLifetime(lock) {} }
        if let hold = Failpoints.verifyHold { Thread.sleep(forTimeInterval: hold) }
        let registry = try store.registry()
        return try chains.map {
            let report = try verify(store, chain: $0, mode: mode, subset: subset, serverRunning: lock == nil)
            // The overview shows each chain's last verification; a subset is not a whole verification.
            if subset == nil {
                try registry.recordVerification(.init(chain: report.chain, checkedAt: Date().timeIntervalSince1970, mode: mode.rawValue, ok: report.ok,
                                                      bundles: report.bundles,
                                                      problems: report.checks.filter { $0.status == .problem }.map { "\($0.name): \($0.detail)" }))
            }
            return report
        }
    }

    static func verify(_ store: ServerStore, chain: String, mode: ArchiveVerifier.Mode, subset: (Int, Int)?, serverRunning: Bool) throws -> ChainReport {
        let replica = try Archive.open(path: store.replicaPath(chain), mode: .readOnly)
        if !serverRunning { try store.recoverIncoming(chain, replica: replica) }
        let log = try replica.receivedBundleLinks().map { ($0.sequence, $0.manifestHash, $0.previous) }
        var checks: [IntegrityCheck] = []
        // Links: 1, 2, 3... each naming the previous manifest hash.
        var links: [String] = []
        var previous: String?
        for (i, entry) in log.enumerated() {
            if entry.0 != i + 1 { links.append("sequence \(entry.0) where \(i + 1) was expected (gap)") }
            if entry.2 != previous { links.append("sequence \(entry.0) names previous \(entry.2?.prefix(16) ?? "none"), the log has \(previous?.prefix(16) ?? "none") (fork)") }
            previous = entry.1
        }
        checks.append(IntegrityCheck(name: "bundle_chain", problems: links, ok: "\(log.count) bundle(s), sequences 1-\(log.count), each linked to the previous"))
        // Stored bundles.
        var bundleProblems: [String] = []
        var checked = 0, inFlight = 0
        var prev: String?
        for entry in log {
            defer { prev = entry.1 }
            if let (n, t) = subset, (entry.0 - 1) % t != n - 1 { continue }
            if mode == .quick && entry.0 != log.count { continue }
            guard let path = store.storedBundlePath(chain, sequence: entry.0) else {
                // Committed a moment ago by the running server, which promotes its file next.
                let incoming = [true, false].map { store.bundlePath(chain, sequence: entry.0, gzip: $0) + ".incoming" }
                if serverRunning && incoming.contains(where: { FileManager.default.fileExists(atPath: $0) }) { inFlight += 1; continue }
                bundleProblems.append("sequence \(entry.0): stored bundle \(store.bundlePath(chain, sequence: entry.0)) is missing")
                continue
            }
            checked += 1
            do {
                let header = try Self.verifyStored(path, expected: entry.1, previousManifestHash: .some(prev))
                if header.sequence != entry.0 || header.deviceChainHash != chain {
                    bundleProblems.append("sequence \(entry.0): the stored bundle's header says chain \(header.deviceChainHash.prefix(16)) sequence \(header.sequence)")
                }
            } catch {
                bundleProblems.append("sequence \(entry.0) (\(path)): \(error)")
            }
        }
        let scope = mode == .quick ? "the latest stored bundle" : "\(checked) stored bundle(s)"
        let pending = inFlight > 0 ? "; \(inFlight) committed by the running server a moment ago, their files not yet promoted (run verify again)" : ""
        checks.append(IntegrityCheck(name: "stored_bundles", problems: bundleProblems, ok: "\(scope): item hashes, manifest hash and chain link verified" + pending))
        // The rules that need a replica's state (a range closed once, a relationship held
        // once, observations in time order): the stored bundles applied again, in order.
        if mode == .full && subset == nil && inFlight == 0 {
            checks.append(try replay(store, chain: chain, log: log, replica: replica))
        }
        checks += try ArchiveVerifier.databaseChecks(replica, mode: mode).map { var c = $0; c.name = "replica_" + c.name; return c }
        // Refusals recorded at sync (divergence, another device's chain, invalid bundles): nothing of them was stored.
        let events = try store.registry().events(chain: chain)
        checks.append(events.isEmpty
            ? IntegrityCheck(name: "sync_refusals", status: .ok, detail: "no divergence or refused bundle recorded")
            : IntegrityCheck(name: "sync_refusals", status: .notice, detail: "\(events.count) refusal(s) recorded (nothing of them stored): " + events.suffix(5).map {
                "\(CanonicalDate.string($0.recordedAt)) \($0.kind) sequence \($0.sequence.map(String.init) ?? "-") from \($0.device ?? "?"): \($0.detail)" }.joined(separator: "; ")))
        return ChainReport(chain: chain, bundles: log.count, checks: checks)
    }

    /// `--full`: the chain's stored bundles applied again, in sequence order, to an empty
    /// replica by the applier that applied them at sync (`BundleApplier`: every check of
    /// Protocol/bundles.md section 5, those against the replica's state included); the
    /// replica must give the chain-state digest the replay gives after its last bundle.
    /// A chain stored before a rule existed is refused here at the bundle that breaks it.
    static func replay(_ store: ServerStore, chain: String, log: [(Int, String, String?)], replica: Archive) throws -> IntegrityCheck {
        let name = "bundle_replay"
        guard let last = log.last else { return IntegrityCheck(name: name, status: .ok, detail: "no bundle to apply again") }
        let fm = FileManager.default
        let directory = store.root + "/cache/replay-\(UUID().uuidString)"
        try PrivateFiles.makeDirectory(store.root + "/cache")
        try PrivateFiles.makeDirectory(directory)
        defer { try? fm.removeItem(atPath: directory) }
        let path = directory + "/replica.sqlite"
        try store.copyTemplate(to: path)
        let scratch = try Archive.open(path: path, singleConnection: true)
        defer { try? scratch.close() }
        try scratch.disableForeignKeyChecks()
        try scratch.prepareForApplies()
        var observation: Int64 = 0
        for entry in log {
            guard let file = store.storedBundlePath(chain, sequence: entry.0) else {
                return IntegrityCheck(name: name, status: .problem, detail: "sequence \(entry.0): no stored bundle to apply again (see stored_bundles)")
            }
            let lines = try StoredBundleLines(path: file)
            let outcome: BundleApplier.Outcome
            do {
                outcome = try BundleApplier.apply(scratch, lines: lines, manifestHash: entry.1, now: Date().timeIntervalSince1970,
                                                  indexes: .automatic(bundleBytes: (try? fm.attributesOfItem(atPath: file)[.size] as? Int) ?? 0))
            } catch {
                let code = (error as? BundleError)?.code.rawValue ?? (error as? BundleApplier.ApplyError)?.code.rawValue ?? "error"
                return IntegrityCheck(name: name, status: .problem, detail: "sequence \(entry.0): applied again, the stored bundle is refused (\(code): \((error as? any CodedError)?.message ?? "\(error)")); "
                                      + "it breaks a rule a server applying it now enforces (Protocol/bundles.md section 5)")
            }
            guard case .applied(let obs, _) = outcome else {
                return IntegrityCheck(name: name, status: .problem, detail: "sequence \(entry.0): applied again, the stored bundle was taken for one applied before")
            }
            observation = obs
        }
        let replayed = try scratch.chainState(observation: observation)
        let stored = try replica.chainStateAfterReceived(sequence: last.0)
        guard let stored, stored.digest == replayed.digest, stored.visibleCount == replayed.visibleCount else {
            return IntegrityCheck(name: name, status: .problem, detail: "applied again, the \(log.count) stored bundle(s) give chain-state digest \(replayed.digest.prefix(16)) "
                                  + "(\(replayed.visibleCount) visible); the replica gives \(stored.map { "\($0.digest.prefix(16)) (\($0.visibleCount) visible)" } ?? "none")")
        }
        return IntegrityCheck(name: name, status: .ok, detail: "\(log.count) stored bundle(s) applied again to an empty replica under every rule; "
                              + "its chain-state digest after sequence \(last.0) is the replica's")
    }

    /// Verifies a kept bundle file (either form) from its bytes; a damaged gzip member is named as such.
    static func verifyStored(_ path: String, expected: String, previousManifestHash: String??) throws -> BundleHeader {
        // A gzip reader is a reference: its failure is seen here after the verify consumed a copy.
        let lines = try StoredBundleLines(path: path)
        do {
            let (header, _) = try BundleFile.verify(lines: lines, expected: expected, previousManifestHash: previousManifestHash)
            if let failure = lines.failure { throw failure }
            return header
        } catch {
            throw lines.failure ?? error
        }
    }
}
