#include <sqlite3.h>
#include "HPSQLiteConfig.h"

// SQLite's result, -1 until applied.
static int memstatus_result = -1;

// sqlite3_config is variadic, which Swift cannot call: this wrapper can.
int hp_sqlite_disable_memstatus(void) {
    if (memstatus_result < 0) memstatus_result = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    return memstatus_result;
}

#include <math.h>
#include <stddef.h>
#include <stdint.h>

// The running exact sum of one group: 128 bits hold any sum of 64-bit terms a table can have.
typedef struct {
    __int128 sum;
    int any;     // a non-NULL value was seen
    int beyond;  // a value was beyond 64-bit micro-units (or not a number)
} hp_exact_sum;

static void hp_exact_sum_step(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc;
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL) return;
    hp_exact_sum *s = sqlite3_aggregate_context(ctx, sizeof(*s));
    if (s == NULL) { sqlite3_result_error_nomem(ctx); return; }
    s->any = 1;
    double x = round(sqlite3_value_double(argv[0]) * 1e6);
    // Not a range test a NaN passes: it fails both comparisons.
    if (!(x >= -9223372036854775808.0 && x < 9223372036854775808.0)) { s->beyond = 1; return; }
    s->sum += (__int128)(sqlite3_int64)x;
}

static void hp_exact_sum_final(sqlite3_context *ctx) {
    hp_exact_sum *s = sqlite3_aggregate_context(ctx, 0);
    if (s == NULL || !s->any || s->beyond || s->sum > (__int128)INT64_MAX || s->sum < (__int128)INT64_MIN) {
        sqlite3_result_null(ctx);
        return;
    }
    sqlite3_result_int64(ctx, (sqlite3_int64)s->sum);
}

int hp_sqlite_register_exact_sum(struct sqlite3 *db) {
    return sqlite3_create_function_v2(db, "hp_exact_micro_sum", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS,
                                      NULL, NULL, hp_exact_sum_step, hp_exact_sum_final, NULL);
}
