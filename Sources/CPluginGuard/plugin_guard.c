#include "plugin_guard.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int guard_exit_code = 1;
static int guard_json_fd = -1;
/* `,"host":"…","session":"…"`: who wrote the line, as in every other line. */
static char guard_producer[512];
/* Lines being written now (by any thread), and whether a plugin crashed: from then on no new
 * line is started, so the handler's line can follow the last whole one. */
static int output_writers;
static int crashing;

static __thread const char *current_plugin;
static __thread int current_index;
static __thread cvhost_guard_phase current_phase;
static __thread uint64_t current_seq;
static __thread int has_alt_stack;
/* The run is on: an exit() now is not cvhost's own (see cvhost_guard_host_exiting). */
static int run_active;
/* Frees a thread's signal stack when the thread ends (see give_back_alt_stack). */
static pthread_key_t alt_stack_key;
static pthread_once_t alt_stack_key_once = PTHREAD_ONCE_INIT;

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
#define FATAL_SIGNAL_COUNT (sizeof fatal_signals / sizeof fatal_signals[0])
/* What was installed before (the default action, or the Swift runtime's crash reporter). */
static struct sigaction previous[FATAL_SIGNAL_COUNT];

/* A tiny async-signal-safe string builder. */
typedef struct {
    char data[1280];
    size_t len;
} line_t;

static void put(line_t *l, const char *s) {
    while (*s && l->len < sizeof l->data - 1) l->data[l->len++] = *s++;
}

static void put_u64(line_t *l, uint64_t v, int min_digits) {
    char digits[24];
    int n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n < min_digits) digits[n++] = '0';
    while (n > 0 && l->len < sizeof l->data - 1) l->data[l->len++] = digits[--n];
}

static const char *signal_name(int sig) {
    switch (sig) {
    case SIGSEGV: return "SIGSEGV, a bad memory access";
    case SIGBUS: return "SIGBUS, a bad memory access";
    case SIGFPE: return "SIGFPE, an arithmetic error";
    case SIGILL: return "SIGILL, an illegal instruction";
    case SIGABRT: return "SIGABRT, it called abort()";
    default: return "a fatal signal";
    }
}

/* "plugin NAME crashed (SIGSEGV, ...) while processing frame N"; sig 0: it called exit().
 * Without a plugin in a call on this thread: "a plugin's own thread called exit()". */
static void describe(line_t *l, int sig) {
    if (!current_plugin) {
        put(l, "a plugin's own thread ended the process (it called exit())");
        return;
    }
    put(l, "plugin ");
    put(l, current_plugin);
    if (sig) {
        put(l, " crashed (");
        put(l, signal_name(sig));
        put(l, ") ");
    } else {
        put(l, " ended the process (it called exit()) ");
    }
    switch (current_phase) {
    case CVHOST_GUARD_CREATE: put(l, "in create()"); break;
    case CVHOST_GUARD_PROCESS:
        put(l, "while processing frame ");
        put_u64(l, current_seq, 1);
        break;
    case CVHOST_GUARD_FLUSH: put(l, "in flush()"); break;
    case CVHOST_GUARD_DESTROY: put(l, "in destroy()"); break;
    }
}

static void write_all(int fd, const line_t *l) {
    size_t off = 0;
    while (off < l->len) {
        ssize_t n = write(fd, l->data + off, l->len - off);
        if (n <= 0) return;
        off += (size_t)n;
    }
}

static void report_and_exit(int sig);

/* Whether this thread raised the signal itself: a fault (si_code > 0), or abort() and raise()
 * (tgkill from this process). A signal sent by another process (kill -SEGV) is nobody's crash. */
static int raised_here(const siginfo_t *info) {
    return info->si_code > 0 || (info->si_code == SI_TKILL && info->si_pid == getpid());
}

static void on_fatal_signal(int sig, siginfo_t *info, void *context) {
    (void)context;
    if (!current_plugin || !raised_here(info)) {
        /* Not a plugin's doing: what was there before (the Swift runtime's crash report, or the
         * default action: a core dump and the usual exit status), on return from this handler. */
        for (size_t i = 0; i < FATAL_SIGNAL_COUNT; i++)
            if (fatal_signals[i] == sig) sigaction(sig, &previous[i], NULL);
        if (info->si_code <= 0) raise(sig); /* sent, not a fault: send it again */
        return; /* a fault: the instruction runs again and faults again, now with the old action */
    }
    report_and_exit(sig);
}

/* Says on stderr and as the last JSON line which plugin ended the run and how, then exits with
 * the guard's code. Async-signal-safe. */
static void report_and_exit(int sig) {
    line_t err = {.len = 0};
    put(&err, "cvhost: error: ");
    describe(&err, sig);
    put(&err, "; the run ends without final metrics (exit code ");
    put_u64(&err, (uint64_t)guard_exit_code, 1);
    put(&err, ")\n");
    write_all(STDERR_FILENO, &err);

    /* Let lines being written finish (at most 200 ms: the crash may be inside a write itself). */
    __atomic_store_n(&crashing, 1, __ATOMIC_SEQ_CST);
    struct timespec step = {.tv_sec = 0, .tv_nsec = 1000000};
    for (int i = 0; i < 200 && __atomic_load_n(&output_writers, __ATOMIC_SEQ_CST) > 0; i++) nanosleep(&step, NULL);
    if (guard_json_fd >= 0 && __atomic_load_n(&output_writers, __ATOMIC_SEQ_CST) == 0) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        line_t json = {.len = 0};
        /* source null: the crash ends every input of the run, not only the one the plugin served. */
        put(&json, "{\"event\":\"session.error\"");
        put(&json, guard_producer);
        put(&json, ",\"source\":null,\"plugin\":");
        if (current_plugin) {
            put(&json, "\"");
            put(&json, current_plugin); /* plugin names are [a-z][a-z0-9_-]*: nothing to escape */
            put(&json, "\",\"plugin_index\":");
            put_u64(&json, (uint64_t)current_index, 1);
        } else {
            put(&json, "null,\"plugin_index\":null");
        }
        put(&json, ",\"seq\":");
        if (current_plugin && current_phase == CVHOST_GUARD_PROCESS) put_u64(&json, current_seq, 1);
        else put(&json, "null");
        put(&json, ",\"ts\":");
        put_u64(&json, (uint64_t)now.tv_sec, 1);
        put(&json, ".");
        put_u64(&json, (uint64_t)now.tv_nsec / 1000, 6);
        put(&json, ",\"pts\":null,\"code\":\"");
        put(&json, sig ? "plugin_crashed" : "plugin_exited");
        put(&json, "\",\"message\":\"");
        describe(&json, sig);
        put(&json, "\"}\n");
        write_all(guard_json_fd, &json);
    }
    _exit(guard_exit_code);
}

/* exit() while the run is on: a plugin's (cvhost ends a run by returning from it first). */
static void on_exit_during_run(void) {
    if (__atomic_load_n(&run_active, __ATOMIC_SEQ_CST)) report_and_exit(0);
}

void cvhost_guard_install(int exit_code, int json_fd) {
    guard_exit_code = exit_code;
    guard_json_fd = json_fd;
    __atomic_store_n(&run_active, 1, __ATOMIC_SEQ_CST);
    atexit(on_exit_during_run);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fatal_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < FATAL_SIGNAL_COUNT; i++) sigaction(fatal_signals[i], &sa, &previous[i]);
}

void cvhost_guard_set_producer(const char *fields) {
    /* Fields too long for the line (a host name escaped to more than 400 bytes) are left out. */
    if (strlen(fields) < sizeof guard_producer) strcpy(guard_producer, fields);
}

void cvhost_guard_host_exiting(void) { __atomic_store_n(&run_active, 0, __ATOMIC_SEQ_CST); }

/* A thread's own signal stack, and the one it had before (a sanitizer's), put back at its end. */
typedef struct {
    stack_t ours;
    stack_t before;
} alt_stack_t;

/* At thread exit: the stack the thread had before is put back (a sanitizer unmaps its own
 * there), and ours is freed. */
static void give_back_alt_stack(void *p) {
    alt_stack_t *a = p;
    sigaltstack(&a->before, NULL);
    free(a->ours.ss_sp);
    free(a);
}

static void make_alt_stack_key(void) { pthread_key_create(&alt_stack_key, give_back_alt_stack); }

void cvhost_guard_enter(const char *plugin, int plugin_index, cvhost_guard_phase phase, uint64_t seq) {
    if (!has_alt_stack) {
        /* Kept for the thread's life: a worker thread runs one plugin's callbacks until the run ends. */
        pthread_once(&alt_stack_key_once, make_alt_stack_key);
        size_t size = 64 * 1024;
        alt_stack_t *a = calloc(1, sizeof *a);
        if (a) {
            a->ours = (stack_t){.ss_sp = malloc(size), .ss_size = size, .ss_flags = 0};
            if (a->ours.ss_sp && sigaltstack(&a->ours, &a->before) == 0) {
                if (pthread_setspecific(alt_stack_key, a) == 0) has_alt_stack = 1;
                else give_back_alt_stack(a);
            } else {
                free(a->ours.ss_sp);
                free(a);
            }
        }
    }
    current_index = plugin_index;
    current_phase = phase;
    current_seq = seq;
    current_plugin = plugin;
}

void cvhost_guard_leave(void) { current_plugin = NULL; }

void cvhost_guard_output_begin(void) {
    __atomic_add_fetch(&output_writers, 1, __ATOMIC_SEQ_CST);
    if (!__atomic_load_n(&crashing, __ATOMIC_SEQ_CST)) return;
    /* A plugin crashed: the process ends in a moment; start no line that could be cut. */
    __atomic_sub_fetch(&output_writers, 1, __ATOMIC_SEQ_CST);
    for (;;) pause();
}

void cvhost_guard_output_end(void) { __atomic_sub_fetch(&output_writers, 1, __ATOMIC_SEQ_CST); }
