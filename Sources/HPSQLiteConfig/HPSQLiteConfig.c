#include <sqlite3.h>
#include "HPSQLiteConfig.h"

// SQLite's result, -1 until applied.
static int memstatus_result = -1;

// Applied when the program loads, before any thread or connection exists: a
// connection opened by a path that never called SQLiteSetup.ensure() (a test's
// raw queue, a registry opened first) would otherwise make it come too late.
__attribute__((constructor)) static void hp_sqlite_config_at_load(void) {
    memstatus_result = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

// sqlite3_config is variadic, which Swift cannot call: this wrapper can.
int hp_sqlite_disable_memstatus(void) {
    if (memstatus_result < 0) memstatus_result = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    return memstatus_result;
}
