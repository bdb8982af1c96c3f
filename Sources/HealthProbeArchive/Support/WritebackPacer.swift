import Foundation
import Synchronization
import HPFileSync

/// While a large write into a file runs elsewhere (SQLite copying a WAL into its
/// database file), starts writing the file's dirty pages back every `interval`,
/// without waiting for them (`sync_file_range`; nothing elsewhere than Linux).
///
/// Without it, the checkpoint after a million-sample bundle left about 650 MB
/// dirty until its closing fsync, and a commit on the same file system meanwhile
/// waited in `fdatasync` while ext4 wrote all of it (ordered journaling): the
/// next 1,000-sample apply took 0.6-1.4 s instead of 0.1 s.
public final class WritebackPacer: Sendable {
    /// Closed by `stop`: the pacing thread ends.
    private let stopping = BoundedQueue<Void>(capacity: 1)
    private let thread: StageThread
    private let count = Count()

    private final class Count: Sendable {
        let starts = Mutex(0)
    }

    /// How many times writeback was started so far.
    public var starts: Int { count.starts.withLock { $0 } }

    /// Starts pacing `path`'s writeback; nil when the file cannot be opened.
    public init?(path: String, interval: Duration = .milliseconds(50)) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        thread = StageThread(name: "healthprobe.writeback-pacer") { [stopping, count] in
            while !stopping.isEnded(waitingUntil: .now + interval) {
                _ = hp_start_writeback(fd, 0, 0)
                count.starts.withLock { $0 += 1 }
            }
            close(fd)
        }
    }

    /// Stops pacing: once it returns, no writeback is started any more. Calling it again does nothing.
    public func stop() {
        stopping.close()
        thread.join()
    }

    deinit { stop() }
}
