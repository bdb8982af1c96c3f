import Foundation
import HealthProbeArchive
import HealthProbeCanonical

/// Bundles from fuzzed bytes, with every hash made right so that the checks
/// behind the hashes are what gets explored.
enum BundleFuzzer {
    /// Lines as a bundle file holds them: LF-separated; a final LF ends the last line.
    static func lines(_ data: UnsafeRawBufferPointer) -> [[UInt8]] {
        var out = data.split(separator: 0x0A, omittingEmptySubsequences: false).map { Array($0) }
        if out.last?.isEmpty == true { out.removeLast() }
        return out
    }

    /// The manifest hash of header, items and trailer lines as they are (Protocol/bundles.md
    /// section 3), for the verify target's raw input; `ManifestHasher` serves parsed headers.
    static func manifestHash(header: [UInt8], items: ArraySlice<[UInt8]>, trailer: [UInt8]) -> String {
        var manifest = header + [0x0A]
        for item in items { manifest += Array(ArchiveHasher.sha256(.item, item).utf8) + [0x0A] }
        return ArchiveHasher.sha256(.manifest, manifest + trailer)
    }

    static func verify(_ data: UnsafeRawBufferPointer) -> String? {
        let all = lines(data)
        guard all.count >= 2 else { return nil }
        let expected = manifestHash(header: all[0], items: all.dropFirst().dropLast(), trailer: all[all.count - 1])
        var verifier = BundleVerifier()
        var items: [(line: [UInt8], item: BundleItem)] = []
        do {
            for line in all {
                if case .item(let item) = try verifier.feed(line) { items.append((line, item)) }
            }
            _ = try verifier.finish(expected: expected)
        } catch {
            return nil
        }
        // Accepted: each item, written again by its typed model, is the line it was decoded from.
        for (line, item) in items where (try? item.canonicalBytes) != line {
            return "a verified \(item.kind.rawValue) item does not write back to its own line"
        }
        // Accepted: its header parses the same way on its own.
        guard (try? BundleVerifier.header(all[0])) != nil else { return "a verified bundle's header is refused by BundleVerifier.header" }
        return nil
    }

    /// An empty replica to start each run from (in memory), and the replica the
    /// runs use: a real file, as the server's, reset from the template by SQLite's
    /// backup before each run.
    nonisolated(unsafe) static var replicas: (template: Archive, scratch: Archive)? = {
        let dir = NSTemporaryDirectory() + "hp-fuzz-apply-\(getpid())"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        guard let t = try? Archive.inMemory(), let s = try? Archive.open(path: dir + "/replica.sqlite", writerCacheMiB: 8) else { return nil }
        return (t, s)
    }()

    /// Bundles the apply target saw accepted (tests: the checks behind acceptance are reached).
    nonisolated(unsafe) static var accepted = 0

    static func apply(_ data: UnsafeRawBufferPointer) -> String? {
        let given = lines(data)
        guard let header = given.first else { return nil }
        let items = given.dropFirst()
        // Trailer and manifest as the node's builder makes them (a header that does not
        // parse gets neither: the applier must refuse it at line 1 all the same).
        var trailer: [UInt8] = []
        var hash = String(repeating: "0", count: 64)
        if let parsed = try? BundleVerifier.header(header), var manifest = try? ManifestHasher(header: parsed) {
            for item in items {
                var kind = "?"
                if case .object(let o)? = try? JSONParser.parse(item), case .string(let k)? = o["kind"] { kind = k }
                manifest.add(itemHash: ArchiveHasher.sha256Digest(.item, item), kind: kind)
            }
            guard let t = try? CanonicalJSON.encode(manifest.trailer.json), let h = try? manifest.finish() else { return nil }
            (trailer, hash) = (t, h)
        }
        let bundle = [header] + Array(items) + [trailer]
        guard let (template, replica) = replicas else { return "cannot create an in-memory replica" }
        do { try template.copy(over: replica) } catch { return "cannot reset the scratch replica: \(error)" }
        let outcome: BundleApplier.Outcome
        do {
            outcome = try BundleApplier.apply(replica, lines: bundle, manifestHash: hash, now: 1_767_225_600)
        } catch is BundleError {
            return unchanged(replica)
        } catch is BundleApplier.ApplyError {
            return unchanged(replica)
        } catch {
            // Anything else would reach the device as `storage`, a retryable failure of the server.
            return "a bundle was refused with an error that is not about the bundle: \(error)"
        }
        guard case .applied = outcome else { return "a bundle applied to an empty replica was \(outcome)" }
        accepted += 1
        // Accepted: the replica passes every check `hp-server verify --full` makes.
        do {
            let problems = try ArchiveVerifier.databaseChecks(replica, mode: .full).filter { $0.status == .problem }
            if let p = problems.first { return "an accepted bundle left the replica failing \(p.name): \(p.detail)" }
        } catch {
            return "the replica cannot be verified after an accepted bundle: \(error)"
        }
        // And applying it again changes nothing.
        do {
            let again = try BundleApplier.apply(replica, lines: bundle, manifestHash: hash, now: 1_767_225_601)
            guard case .alreadyApplied = again else { return "an accepted bundle applied twice was \(again)" }
        } catch {
            return "an accepted bundle sent again was refused: \(error)"
        }
        return nil
    }

    /// A refused bundle must leave nothing behind.
    static func unchanged(_ replica: Archive) -> String? {
        guard let rows = try? replica.storedRowCount() else { return "the replica cannot be read after a refused bundle" }
        return rows == 0 ? nil : "a refused bundle left \(rows) rows behind"
    }
}
