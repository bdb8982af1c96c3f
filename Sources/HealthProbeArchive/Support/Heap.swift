import HPFileSync

/// The process's heap.
public enum Heap {
    /// Returns the allocator's free memory to the system (glibc's `malloc_trim`):
    /// after a large piece of work whose buffers the allocator would otherwise keep.
    public static func trim() { _ = hp_trim_heap() }

    /// How many heap arenas the process was limited to by `ProcessSettings.apply` (one
    /// per core, 2 to 8), or nil when it was not: not applied, another C library, or the user set
    /// `MALLOC_ARENA_MAX` or `GLIBC_TUNABLES` (docs/decisions/2026-11-25-heap-arenas.md).
    public static var arenaLimit: Int? {
        let n = Int(hp_heap_arena_limit())
        return n > 0 ? n : nil
    }

    /// The size from which every allocation is mapped on its own and unmapped when
    /// freed (1 MiB, fixed by `ProcessSettings.apply`), or nil when it was not fixed.
    public static var mmapThreshold: Int? {
        let n = Int(hp_heap_mmap_threshold())
        return n > 0 ? n : nil
    }

    /// Whether `block` (from malloc) was mapped on its own (glibc), or nil where unknown.
    static func isMapped(_ block: UnsafeRawPointer) -> Bool? {
        let r = hp_heap_block_is_mapped(block)
        return r < 0 ? nil : r == 1
    }

}
