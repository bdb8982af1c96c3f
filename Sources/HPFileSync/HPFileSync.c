#define _GNU_SOURCE
#include <fcntl.h>
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
