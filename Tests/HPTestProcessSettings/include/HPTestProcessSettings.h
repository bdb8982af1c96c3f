#ifndef HP_TEST_PROCESS_SETTINGS_H
#define HP_TEST_PROCESS_SETTINGS_H

/// 1: the test bundle applied the executables' process settings when it loaded.
int hp_test_process_settings_linked(void);

#endif
