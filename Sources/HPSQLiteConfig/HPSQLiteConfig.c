#include <sqlite3.h>
#include "HPSQLiteConfig.h"

// SQLite's result, -1 until applied.
static int memstatus_result = -1;

// sqlite3_config is variadic, which Swift cannot call: this wrapper can. Called by
// the executables at start (`ProcessSettings.apply`), never when a library loads.
int hp_sqlite_disable_memstatus(void) {
    if (memstatus_result < 0) memstatus_result = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    return memstatus_result;
}
