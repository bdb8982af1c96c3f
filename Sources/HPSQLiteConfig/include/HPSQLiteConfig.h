#ifndef HP_SQLITE_CONFIG_H
#define HP_SQLITE_CONFIG_H

/// Turns off SQLite's memory-usage statistics (SQLITE_CONFIG_MEMSTATUS), which
/// take one process-wide mutex on every allocation of every connection.
/// Applied once, by the executable before its first connection (`ProcessSettings.apply`);
/// returns that result: SQLITE_OK, or SQLITE_MISUSE had it come too late.
int hp_sqlite_disable_memstatus(void);

#endif
