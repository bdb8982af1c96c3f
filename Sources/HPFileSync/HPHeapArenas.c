#include <stdlib.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include "HPFileSync.h"

static int arena_limit = 0;
static long mmap_threshold = 0;

// Called by the executables at start (`ProcessSettings.apply`), never when a library
// loads: glibc
// gives each thread that meets contention an arena of its own (up to 8 per core)
// and keeps what those arenas freed, so worker threads that take turns held
// 80-190 MB more than the work needed (docs/decisions/2026-11-25-heap-arenas.md).
// One arena per core, at least two and at most eight. An explicit
// MALLOC_ARENA_MAX (or GLIBC_TUNABLES) is left as the user set it.
static void hp_limit_heap_arenas(void) {
#if defined(__GLIBC__)
    if (getenv("MALLOC_ARENA_MAX") != NULL || getenv("GLIBC_TUNABLES") != NULL) return;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int limit = cores < 2 ? 2 : (cores > 8 ? 8 : (int)cores);
    if (mallopt(M_ARENA_MAX, limit) == 1) arena_limit = limit;
#endif
}

// Also at start: blocks of 1 MiB or more are always mapped on their own and unmapped
// when freed. glibc's default threshold moves up to the size of each mapped block
// freed (up to 32 MiB), after which part buffers of 1-8 MiB came from the arenas and
// stayed there: the server's peak in a first sync of 1M samples was 167-193 MB with it,
// 150 MB with the threshold fixed (docs/decisions/2026-11-25-heap-arenas.md, amended).
// An explicit MALLOC_MMAP_THRESHOLD_ (or GLIBC_TUNABLES) is left as the user set it.
static void hp_fix_mmap_threshold(void) {
#if defined(__GLIBC__)
    if (getenv("MALLOC_MMAP_THRESHOLD_") != NULL || getenv("GLIBC_TUNABLES") != NULL) return;
    if (mallopt(M_MMAP_THRESHOLD, 1 << 20) == 1) mmap_threshold = 1 << 20;
#endif
}

void hp_heap_apply_limits(void) {
    hp_limit_heap_arenas();
    hp_fix_mmap_threshold();
}

int hp_heap_arena_limit(void) { return arena_limit; }

long hp_heap_mmap_threshold(void) { return mmap_threshold; }

int hp_heap_block_is_mapped(const void *block) {
#if defined(__GLIBC__)
    // glibc's chunk header: the size word before the block, bit 1 (IS_MMAPPED).
    size_t size = ((const size_t *)block)[-1];
    return (size & 2) != 0;
#else
    (void)block;
    return -1;
#endif
}

