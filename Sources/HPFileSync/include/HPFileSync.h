#ifndef HP_FILE_SYNC_H
#define HP_FILE_SYNC_H

/// Starts writing back the dirty pages of `length` bytes at `offset` of `fd`
/// without waiting for them (Linux `sync_file_range(SYNC_FILE_RANGE_WRITE)`),
/// so a later fsync has little left to wait for. Returns 0, or -1 with errno
/// set; elsewhere than Linux it does nothing and returns 0.
int hp_start_writeback(int fd, long long offset, long long length);

/// Returns the allocator's free memory to the system (glibc `malloc_trim(0)`);
/// returns 1 when some was released. Elsewhere it does nothing and returns 0.
int hp_trim_heap(void);

/// Limits the heap to one arena per core (2 to 8) unless the user set MALLOC_ARENA_MAX
/// or GLIBC_TUNABLES; returns the limit set (0: none). For executables, at start.
int hp_limit_heap_arenas(void);

/// Fixes the allocator's mmap threshold at 1 MiB unless the user set
/// MALLOC_MMAP_THRESHOLD_ or GLIBC_TUNABLES; returns it (0: not fixed). For executables, at start.
long hp_fix_mmap_threshold(void);

/// The number of heap arenas the process was limited to (by hp_limit_heap_arenas)
/// (glibc; one per core, 2 to 8), or 0 when it was not (another C library, or
/// MALLOC_ARENA_MAX / GLIBC_TUNABLES set by the user).
int hp_heap_arena_limit(void);

/// The fixed threshold (bytes) from which the allocator maps each block on its own
/// (set by hp_fix_mmap_threshold, 1 MiB), or 0 when it was not set (another C library,
/// or MALLOC_MMAP_THRESHOLD_ / GLIBC_TUNABLES set by the user).
long hp_heap_mmap_threshold(void);

/// Whether a block from malloc was mapped on its own (glibc: its chunk header's
/// IS_MMAPPED bit): 1 or 0, or -1 where unknown.
int hp_heap_block_is_mapped(const void *block);

#endif
