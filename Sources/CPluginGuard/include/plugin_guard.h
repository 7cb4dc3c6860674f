/*
 * CPluginGuard: names the plugin when a plugin's code crashes the process.
 *
 * Plugins run in cvhost's own process, so a plugin that dereferences a bad pointer, divides by
 * zero or aborts takes the process down. This cannot be undone, but it can be said: while a
 * thread is inside a plugin's callback it carries the plugin's name, index and frame (thread-
 * local, set by cvhost_guard_enter/leave), and a fatal signal on that thread writes one line on
 * stderr naming them, one `session.error` line (code plugin_crashed) on the JSON Lines output
 * after the lines being written at that moment (no new one is started), and exits with the
 * code given to install.
 * A fatal signal outside any plugin, or sent by another process, goes to what was installed
 * before (the Swift runtime's crash report, or the default action).
 * A plugin that calls exit() while the run is on is said the same way (code plugin_exited;
 * without a plugin in a call on the exiting thread: "a plugin's own thread"), and the process
 * exits with the same code instead of the plugin's. (_exit() cannot be seen from inside.)
 * Each thread's signal stack is freed when the thread ends, the one it had before put back. Signal handlers are in C:
 * they may only call async-signal-safe functions, and Swift gives no such guarantee.
 */
#ifndef CPLUGINGUARD_H
#define CPLUGINGUARD_H

#include <stdint.h>

/* Installs the handlers for SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT, and the exit() check,
 * and marks the run as on. json_fd: where JSON Lines go. */
void cvhost_guard_install(int exit_code, int json_fd);

/* The fields that follow "event" in every JSON line (`,"host":"…","session":"…"`, escaped
 * already), copied for the crash line. Call before install. */
void cvhost_guard_set_producer(const char *fields);

/* The run is over: an exit() from now on is cvhost's own. */
void cvhost_guard_host_exiting(void);

/* What a plugin's callback is doing when entered. */
typedef enum {
    CVHOST_GUARD_CREATE = 0,
    CVHOST_GUARD_PROCESS = 1,
    CVHOST_GUARD_FLUSH = 2,
    CVHOST_GUARD_DESTROY = 3,
} cvhost_guard_phase;

/* Marks this thread as inside a plugin callback. `plugin` must stay valid until leave. seq: the
 * frame's sequence (only for PROCESS). Also gives the thread an alternate signal stack once, so
 * a plugin's stack overflow is reported too. */
void cvhost_guard_enter(const char *plugin, int plugin_index, cvhost_guard_phase phase, uint64_t seq);
void cvhost_guard_leave(void);

/* Brackets every write of a JSON line, so the handler never writes into the middle of one.
 * After a plugin crashed, begin never returns (the process is ending). */
void cvhost_guard_output_begin(void);
void cvhost_guard_output_end(void);

#endif
