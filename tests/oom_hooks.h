/* oom_hooks.h -- failure injection for tests/test_oom.c.  tests/oom_archive.sh
 * renames gko's calls to the allocating functions (tests/oom_hooks.syms) to
 * the hooks of oom_hooks.c, which count the calls of each class, fail the
 * armed one(s), and keep a table of what gko allocated and has not freed. */
#ifndef GKO_TESTS_OOM_HOOKS_H
#define GKO_TESTS_OOM_HOOKS_H

#include <stdio.h>

/* Classes of failure points: host memory (malloc and friends), and device
 * resources (device and pinned memory, streams, events, graphs, cuBLASLt
 * objects). */
enum { OOM_HOST = 0, OOM_DEVICE = 1, OOM_CLASSES = 2 };

/* Fails the n-th call of class `cls` counted from now (n >= 1), and with
 * `persistent` every later one of that class too; n = 0 disarms.  Resets the
 * call and failure counters of every class. */
void oom_arm(int cls, long n, int persistent);
void oom_disarm(void);
/* Calls of class cls since the last oom_arm (failed ones included). */
long oom_calls(int cls);
/* Failures injected since the last oom_arm (any class). */
long oom_fired(void);
/* The function that failed first since the last oom_arm ("" if none). */
const char *oom_first_failure(void);
/* Calls of class cls since the last oom_arm, per hooked function, as
 * "name count, ..." into buf. */
void oom_call_summary(int cls, char *buf, size_t bytes);

/* What gko allocated and has not freed yet: host blocks (cls OOM_HOST), or
 * device objects (memory, streams, events, graphs, cuBLASLt objects). */
long oom_live(int cls);
/* Writes the live entries of class cls allocated after call serial
 * `after` (0: all), one a line, with their size and the allocating function. */
void oom_dump_live(FILE *f, int cls, long after);
/* Serial number of the latest hooked call (of any class); the live table
 * remembers each entry's serial. */
long oom_serial(void);

#endif /* GKO_TESTS_OOM_HOOKS_H */
