#ifndef HP_SQLITE_CONFIG_H
#define HP_SQLITE_CONFIG_H

/// Turns off SQLite's memory-usage statistics (SQLITE_CONFIG_MEMSTATUS), which
/// take one process-wide mutex on every allocation of every connection.
/// Must run before SQLite is initialized (before the first connection opens);
/// returns SQLITE_OK, or SQLITE_MISUSE when it came too late.
int hp_sqlite_disable_memstatus(void);

#endif
