#include "HPSQLiteConfig.h"
#include "HPFileSync.h"
#include "HPTestProcessSettings.h"

// Test processes only: the settings each executable applies at start
// (`ProcessSettings.apply`, the same two calls), applied as the test bundle loads so
// that no test's first connection comes before them, whichever test runs first.
__attribute__((constructor)) static void hp_test_process_settings_at_load(void) {
    hp_heap_apply_limits();
    (void)hp_sqlite_disable_memstatus();
}

int hp_test_process_settings_linked(void) { return 1; }
