import HPFileSync

/// Settings that hold for the whole process: glibc's heap limited to one arena per core
/// and its mmap threshold fixed at 1 MiB (docs/decisions/2026-11-25-heap-arenas.md), and
/// SQLite's memory statistics off (they take a process-wide mutex on every allocation).
/// They belong to the program, not to a library: `hp-node`, `hp-server`, `hp-bench` and
/// `hp-fuzz` call `apply()` first thing in `main`, before any thread or connection; no
/// library sets them on its own. A user's `MALLOC_ARENA_MAX`, `MALLOC_MMAP_THRESHOLD_`
/// or `GLIBC_TUNABLES` is left as set.
public enum ProcessSettings {
    /// What was applied.
    public struct Applied: Sendable, Equatable {
        /// Heap arenas the process is limited to, nil when not limited.
        public let arenaLimit: Int?
        /// The fixed mmap threshold in bytes, nil when not fixed.
        public let mmapThreshold: Int?
        /// SQLite's answer: 0 when memory statistics are off, 21 when a connection opened first.
        public let sqliteMemoryStatistics: Int32
    }

    private static let applied: Applied = {
        let arenas = Int(hp_limit_heap_arenas()), threshold = Int(hp_fix_mmap_threshold())
        return Applied(arenaLimit: arenas > 0 ? arenas : nil, mmapThreshold: threshold > 0 ? threshold : nil,
                       sqliteMemoryStatistics: SQLiteSetup.result)
    }()

    /// Applies the settings once; later calls return what the first applied.
    @discardableResult
    public static func apply() -> Applied { applied }
}
