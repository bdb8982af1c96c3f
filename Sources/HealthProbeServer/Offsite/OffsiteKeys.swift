import Foundation

/// Object keys, under the configured prefix. Every name is derived from the content:
/// a bundle's chain and sequence (its header) and the SHA-256 of its bytes, a snapshot
/// file's SHA-256; the hash is checked whenever an object is read back.
///
/// - `chains/<chain>/<sequence, 8 digits>-<sha256>.jsonl.gz` (or `.jsonl`): a stored bundle, as kept.
/// - `snapshots/<UTC time>/tls/<name>-<sha256>`, then `snapshots/<UTC time>/server.sqlite-<sha256>`:
///   the TLS identity and the registry, the registry written last (a snapshot without it is incomplete).
public enum OffsiteKeys {
    public static func bundle(chain: String, sequence: Int, sha256: String, gzip: Bool) -> String {
        "chains/\(chain)/" + String(format: "%08d", sequence) + "-\(sha256).jsonl" + (gzip ? ".gz" : "")
    }

    /// Reads a bundle key (after the prefix): chain, sequence, hash and form; nil for anything else.
    public static func parseBundle(_ name: String) -> (chain: String, bundle: RestoreSourceBundle)? {
        let parts = name.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "chains", ChainName.isValid(String(parts[1])) else { return nil }
        var file = Substring(parts[2])
        let gzip = file.hasSuffix(".jsonl.gz")
        guard gzip || file.hasSuffix(".jsonl") else { return nil }
        file = file.dropLast(gzip ? 9 : 6)
        let fields = file.split(separator: "-", omittingEmptySubsequences: false)
        guard fields.count == 2, fields[0].count == 8, fields[0].allSatisfy({ $0.isASCII && $0.isNumber }),
              let sequence = Int(fields[0]), sequence >= 1, ChainName.isValid(String(fields[1])) else { return nil }
        return (String(parts[1]), RestoreSourceBundle(sequence: sequence, reference: name, sha256: String(fields[1]), gzip: gzip))
    }

    /// The snapshot directory of a time: `snapshots/20261129T051500.123Z` (sorts by time).
    public static func snapshot(at time: Double) -> String {
        let date = Date(timeIntervalSince1970: time)
        let (stamp, _) = SigV4.timestamps(date)
        let millis = Int((time * 1000).rounded(.down)) % 1000
        return "snapshots/" + String(stamp.dropLast()) + String(format: ".%03dZ", millis)
    }

    /// `<name>-<sha256>`: the file's name and its hash.
    public static func parseHashed(_ name: Substring) -> (String, String)? {
        guard let dash = name.lastIndex(of: "-") else { return nil }
        let hash = String(name[name.index(after: dash)...])
        guard ChainName.isValid(hash), dash > name.startIndex else { return nil }
        return (String(name[..<dash]), hash)
    }
}
