import Foundation
import Synchronization

/// Bounds on what reading a zip may inflate, counted on the bytes actually inflated, not on
/// the sizes the zip declares (which a crafted zip can lie about). A member that inflates
/// past the size its central directory declares is refused at once, whatever the limits.
public struct ZipLimits: Sendable, Equatable {
    /// Bytes all members read for one import may inflate to, together (nil: no limit).
    public var maxInflatedBytes: UInt64?
    /// Times its compressed size one member may inflate to (nil: no limit).
    public var maxRatio: UInt64?

    public init(maxInflatedBytes: UInt64? = nil, maxRatio: UInt64? = nil) {
        self.maxInflatedBytes = maxInflatedBytes
        self.maxRatio = maxRatio
    }
}

/// Counts inflated bytes for one import (shared by every member read) and refuses the
/// chunk that goes past a member's declared size or a `ZipLimits` bound.
final class InflateMeter: Sendable {
    let limits: ZipLimits
    private let total = Mutex<UInt64>(0)

    init(_ limits: ZipLimits) { self.limits = limits }

    /// Bytes inflated so far, over all members.
    var inflated: UInt64 { total.withLock { $0 } }

    /// Why a member was stopped.
    struct Exceeded: Error, CustomStringConvertible {
        let description: String
    }

    /// Counts one member's reading: `read` bytes of it so far (this chunk included).
    func count(chunk: Int, memberSoFar read: UInt64, member: String, declared: UInt64, compressed: UInt64) throws {
        let all = total.withLock { t -> UInt64 in
            t &+= UInt64(chunk)
            return t
        }
        if read > declared {
            throw Exceeded(description: "the zip member \(member) inflates to more than the \(declared) bytes the zip declares for it (stopped after \(read)): a damaged or crafted zip (a zip bomb?); nothing was imported")
        }
        if let m = limits.maxRatio, case let (bound, over) = max(compressed, 1).multipliedReportingOverflow(by: m), !over, read > bound {
            throw Exceeded(description: "the zip member \(member) inflates to more than \(m) times its \(compressed) compressed bytes (stopped after \(read)): more than an Apple Health export expands to (a zip bomb?); nothing was imported")
        }
        if let m = limits.maxInflatedBytes, all > m {
            throw Exceeded(description: "the zip inflates to more than \(m) bytes in all (stopped after \(all)): over the limit for one import; nothing was imported")
        }
    }
}
