// Writes glibc's malloc_info (each arena's size and free memory) with the process's
// RssAnon every 0.25 s to MI_DIR/mi.NNNNN.xml: where a benchmark's heap memory sits
// (docs/decisions/2026-11-25-heap-arenas.md, amended 2026-11-28). Diagnostic only:
// its own thread takes an arena slot too.
//
//   gcc -O2 -shared -fPIC -o /tmp/malloc_info_shim.so scripts/bench/malloc_info_shim.c -lpthread
//   mkdir /tmp/mi && MI_DIR=/tmp/mi LD_PRELOAD=/tmp/malloc_info_shim.so .build/release/hp-bench import --records 1000000
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void *loop(void *arg) {
    const char *dir = arg;
    char path[4096], line[256];
    for (int n = 0;; n++) {
        usleep(250000);
        snprintf(path, sizeof path, "%s/mi.%05d.xml", dir, n);
        FILE *f = fopen(path, "w");
        if (!f) continue;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        fprintf(f, "<t>%ld.%03ld</t>\n", (long)ts.tv_sec, ts.tv_nsec / 1000000);
        FILE *s = fopen("/proc/self/status", "r");
        while (s && fgets(line, sizeof line, s))
            if (!strncmp(line, "RssAnon", 7) || !strncmp(line, "VmHWM", 5)) fputs(line, f);
        if (s) fclose(s);
        malloc_info(0, f);
        fclose(f);
    }
    return NULL;
}

__attribute__((constructor)) static void start(void) {
    char *dir = getenv("MI_DIR");
    if (!dir) return;
    pthread_t t;
    if (pthread_create(&t, NULL, loop, dir) == 0) pthread_detach(t);
}
