import HPFileSync

/// Process-wide settings the executables (`hp-node`, `hp-server`, `hp-bench`, `hp-fuzz`)
/// apply once at start, before any thread or connection exists: heap arenas limited
/// and the mmap threshold fixed (docs/decisions/2026-11-25-heap-arenas.md), SQLite's
/// memory statistics off (`SQLiteSetup`). The libraries never apply them on their own.
public enum ProcessSettings {
    private static let applied: Void = {
        hp_heap_apply_limits()
        SQLiteSetup.ensure()
    }()

    /// Applies the settings; later calls do nothing.
    public static func apply() { _ = applied }
}
