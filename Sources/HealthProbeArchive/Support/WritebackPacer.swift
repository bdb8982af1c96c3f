import Dispatch
import Foundation
import HPFileSync

/// While a large write into a file runs elsewhere (SQLite copying a WAL into its
/// database file), starts writing the file's dirty pages back every `interval`,
/// without waiting for them (`sync_file_range`; nothing elsewhere than Linux).
///
/// Without it, the checkpoint after a million-sample bundle left about 650 MB
/// dirty until its closing fsync, and a commit on the same file system meanwhile
/// waited in `fdatasync` while ext4 wrote all of it (ordered journaling): the
/// next 1,000-sample apply took 0.6-1.4 s instead of 0.1 s.
/// `@unchecked Sendable`: `stopped` is touched only on the serial `queue`; the rest is immutable.
public final class WritebackPacer: @unchecked Sendable {
    private let queue = DispatchQueue(label: "healthprobe.writeback-pacer")
    private let timer: DispatchSourceTimer
    private let fd: Int32
    private let count = Counter()
    private var stopped = false

    /// `@unchecked Sendable`: `n` is read and written only under `lock`.
    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var n = 0
        func add() { lock.withLock { n += 1 } }
        var value: Int { lock.withLock { n } }
    }

    /// How many times writeback was started so far.
    public var starts: Int { count.value }

    /// Starts pacing `path`'s writeback; nil when the file cannot be opened.
    public init?(path: String, interval: DispatchTimeInterval = .milliseconds(50)) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        self.fd = fd
        timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + interval, repeating: interval)
        timer.setEventHandler { [count] in
            _ = hp_start_writeback(fd, 0, 0)
            count.add()
        }
        timer.resume()
    }

    /// Stops pacing: once it returns, no writeback is started any more. Calling it again does nothing.
    public func stop() {
        queue.sync {
            guard !stopped else { return }
            stopped = true
            timer.cancel()
            close(fd)
        }
    }

    deinit { stop() }
}
