import HPFileSync

/// The process's heap.
public enum Heap {
    /// Returns the allocator's free memory to the system (glibc's `malloc_trim`):
    /// after a large piece of work whose buffers the allocator would otherwise keep.
    public static func trim() { _ = hp_trim_heap() }
}
