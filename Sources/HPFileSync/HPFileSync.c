#define _GNU_SOURCE
#include <fcntl.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include "HPFileSync.h"

// sync_file_range needs _GNU_SOURCE, which Swift's Glibc module does not define.
int hp_start_writeback(int fd, long long offset, long long length) {
#if defined(__linux__)
    return sync_file_range(fd, (off_t)offset, (off_t)length, SYNC_FILE_RANGE_WRITE);
#else
    (void)fd; (void)offset; (void)length;
    return 0;
#endif
}

// malloc_trim is in <malloc.h>, which Swift's Glibc module does not include.
int hp_trim_heap(void) {
#if defined(__GLIBC__)
    return malloc_trim(0);
#else
    return 0;
#endif
}
