#include <sqlite3.h>
#include "HPSQLiteConfig.h"

// sqlite3_config is variadic, which Swift cannot call: this wrapper can.
int hp_sqlite_disable_memstatus(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
