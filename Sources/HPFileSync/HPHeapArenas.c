#include <stdlib.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include "HPFileSync.h"

static int arena_limit = 0;

// Runs when the program loads, before main and before any thread exists: glibc
// gives each thread that meets contention an arena of its own (up to 8 per core)
// and keeps what those arenas freed, so worker threads that take turns held
// 80-190 MB more than the work needed (docs/decisions/2026-11-25-heap-arenas.md).
// One arena per core, at least two and at most eight. An explicit
// MALLOC_ARENA_MAX (or GLIBC_TUNABLES) is left as the user set it.
__attribute__((constructor))
static void hp_limit_heap_arenas(void) {
#if defined(__GLIBC__)
    if (getenv("MALLOC_ARENA_MAX") != NULL || getenv("GLIBC_TUNABLES") != NULL) return;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int limit = cores < 2 ? 2 : (cores > 8 ? 8 : (int)cores);
    if (mallopt(M_ARENA_MAX, limit) == 1) arena_limit = limit;
#endif
}

int hp_heap_arena_limit(void) { return arena_limit; }
