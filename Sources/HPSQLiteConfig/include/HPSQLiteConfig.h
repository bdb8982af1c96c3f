#ifndef HP_SQLITE_CONFIG_H
#define HP_SQLITE_CONFIG_H

/// Turns off SQLite's memory-usage statistics (SQLITE_CONFIG_MEMSTATUS), which
/// take one process-wide mutex on every allocation of every connection.
/// Applied once, by the executable before its first connection (`ProcessSettings.apply`);
/// returns that result: SQLITE_OK, or SQLITE_MISUSE had it come too late.
int hp_sqlite_disable_memstatus(void);

struct sqlite3;

/// Registers `hp_exact_micro_sum(X)` on connection `db`: the exact sum of `round(X * 1e6)`
/// (half away from zero) over the non-NULL values, as a 64-bit integer; NULL when there
/// is none, when a value is NaN-free but beyond 64-bit micro-units, or when the sum is.
/// Unlike SQLite's `sum`, it never fails with "integer overflow", and its result does not
/// depend on row order (it sums in 128 bits). Returns SQLite's result code.
int hp_sqlite_register_exact_sum(struct sqlite3 *db);

#endif
