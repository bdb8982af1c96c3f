import Foundation

extension ArchiveHasher {
    /// Whether two texts (hashes, tokens) are equal, in time that depends on their length
    /// only, never on where they first differ: for comparing a presented secret's hash.
    public static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        var diff: UInt8 = 0
        for i in x.indices { diff |= x[i] ^ y[i] }
        return diff == 0
    }
}
