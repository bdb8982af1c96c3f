import Foundation
import HealthProbeArchive

/// One line for a compaction's report, as `hp-node compact` and `hp-server compact` print it.
public enum CompactionText {
    public static func line(_ r: ArchiveCompaction.Report, name: String) -> String {
        let seconds = String(format: "%.1f", r.seconds)
        guard r.compacted else {
            return "\(name): nothing to compact, \(r.freePagesBefore) of \(r.pagesBefore) pages free (\(megabytes(r.bytesBefore))); it compacts from 1% and 64 pages free"
        }
        return "\(name): \(r.pagesBefore) pages -> \(r.pagesAfter) (\(megabytes(r.bytesBefore)) -> \(megabytes(r.bytesAfter))), "
            + "\(r.freePagesBefore) free pages returned to the disk in \(seconds) s (the copy \(String(format: "%.1f", r.copySeconds)) s); row counts and \(r.digestsCompared) chain-state digest(s) unchanged"
    }

    /// A progress line's text for a step.
    public static func step(_ step: ArchiveCompaction.Step) -> String {
        switch step {
        case .checkingBefore: return "counting rows and computing the latest chain-state digest"
        case .copying(let bytes): return "copying \(megabytes(bytes)) and writing it back"
        case .checkingAfter: return "checking the rows and the digest again"
        }
    }

    /// "404.0 MB": a file size as the compaction lines and `hp-node status` print it.
    public static func megabytes(_ bytes: Int) -> String { String(format: "%.1f MB", Double(bytes) / 1_000_000) }
}
