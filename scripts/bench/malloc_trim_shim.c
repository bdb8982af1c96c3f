// Counts a process's malloc_trim calls and times each, one line per call in
// /tmp/trims.PID (docs/decisions/2026-11-25-heap-arenas.md).
//
//   gcc -O2 -shared -fPIC -o /tmp/malloc_trim_shim.so scripts/bench/malloc_trim_shim.c -ldl
//   LD_PRELOAD=/tmp/malloc_trim_shim.so hp-node import --home H export.zip; wc -l /tmp/trims.*
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

int malloc_trim(size_t pad) {
    static int (*real)(size_t) = 0;
    if (!real) real = (int (*)(size_t))dlsym(RTLD_NEXT, "malloc_trim");
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    int r = real(pad);
    clock_gettime(CLOCK_MONOTONIC, &b);
    char path[64];
    snprintf(path, sizeof path, "/tmp/trims.%d", (int)getpid());
    FILE *f = fopen(path, "a");
    if (f) {
        fprintf(f, "%.3f ms\n", (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6);
        fclose(f);
    }
    return r;
}
