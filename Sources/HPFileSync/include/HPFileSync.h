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

/// Limits the heap arenas (one per core, 2 to 8) and fixes the mmap threshold at
/// 1 MiB (glibc), unless the user set the allocator's own variables. Called once by
/// each executable at start (`ProcessSettings.apply`), before its threads exist.
void hp_heap_apply_limits(void);

/// The number of heap arenas the process was limited to at start
/// (glibc; one per core, 2 to 8), or 0 when it was not (not applied, another C
/// library, or MALLOC_ARENA_MAX / GLIBC_TUNABLES set by the user).
int hp_heap_arena_limit(void);

/// The fixed threshold (bytes) from which the allocator maps each block on its own
/// (set at start, 1 MiB), or 0 when it was not set (not applied, another C library,
/// or MALLOC_MMAP_THRESHOLD_ / GLIBC_TUNABLES set by the user).
long hp_heap_mmap_threshold(void);

/// Whether a block from malloc was mapped on its own (glibc: its chunk header's
/// IS_MMAPPED bit): 1 or 0, or -1 where unknown.
int hp_heap_block_is_mapped(const void *block);

#endif
