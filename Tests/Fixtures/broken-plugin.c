// One source, many deliberately broken plugins: each -DBREAK_... builds a plugin with one
// defect, so that every refusal of the loader is tested against a real shared object;
// -DCRASH_ON_FRAME=N and -DABORT_ON_FRAME=N build plugins that crash the process on frame N;
// -DPRINT_TO_STDOUT one that writes to stdout on every frame (and into its constructor), as
// careless plugins and chatty libraries do (-DPRINT_FLUSH: flushing after each write);
// -DHANG_ON_FRAME=N one that never returns from process() on frame N (-DHANG_IN_FLUSH: from flush(),
// -DHANG_IN_DESTROY: from destroy());
// -DEXIT_ON_FRAME=N one that calls exit(0) on frame N (-DEXIT_FROM_THREAD: from a thread of its own);
// -DEMIT_FROM_THREAD one that emits from a thread of its own (and in create) as well as in process();
// -DHANG_IN_CREATE one whose create() never returns; -DLEAK_MB=N one that leaks N MiB a frame;
// -DCRASH_ON_LOAD one whose constructor crashes (listing plugins must not run it);
// -DSPAWN_CHILDREN=\"FILE\" one whose create() starts a child in its group and a grandchild in a
// session of its own (a double fork with setsid), and writes their pids to FILE, one a line;
// -DBREAK_ABI1 one that exports its descriptor as ABI 1 did, through an entry function;
// -DORDERED_STAGE one with an ordered stage that reports, for each frame, whether it came in order
// (-DBREAK_ORDERED_STAGE: without shared_destroy, which the loader refuses);
// -DREQUEST_FRAMES=W,H,RESIZE,PAD,FORMAT one whose create() asks for frames of that size (ABI 2.2;
// it takes GRAY8 and RGB24) and whose process() says what came: a "frame" result with the frame's
// size, format, source size, content rectangle, its first and middle bytes, and what a second
// request from process() returned. With -DREQUEST_FLAGS=F too, the request's flags (ABI 2.3;
// CVHOST_FRAME_REQUEST_FULL_FRAME: the result adds the full frame's size, format and whether its own
// `full` is NULL, and the first frame's full picture is written, rows packed, to $DUMP_FULL; with
// CVHOST_FRAME_REQUEST_MOTION_REGIONS, a frame with motion regions adds them, [x, y, width, height] each).
#include <cvhost/plugin.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef PLUGIN_NAME
#define PLUGIN_NAME "broken"
#endif

typedef struct state { const cvhost_host *host; } state;

#ifdef REQUEST_FRAMES
static const uint32_t requested[] = {REQUEST_FRAMES};
#endif

#ifdef EXIT_FROM_THREAD
static void *exit_now(void *arg) {
    (void)arg;
    exit(0);
}
#endif

#ifdef EMIT_FROM_THREAD
// Emits as fast as it can from its own thread until the process ends; counts what was accepted.
static volatile long accepted_from_thread;
static void *emitter(void *arg) {
    const cvhost_host *host = arg;
    for (;;)
        if (host->emit(host->context, "async", "{\"from\":\"thread\"}") == 0) accepted_from_thread++;
    return NULL;
}
#endif

#ifdef SPAWN_CHILDREN
#include <signal.h>
// Children a worker leaves behind: each sleeps for 50 minutes unless it is ended.
static void spawn_children(void) {
    FILE *f = fopen(SPAWN_CHILDREN, "a");
    if (!f) return;
    pid_t child = fork();
    if (child == 0) {
        execl("/bin/sleep", "sleep", "3001", (char *)NULL);
        _exit(1);
    }
    int pipefd[2];
    if (pipe(pipefd) != 0) return;
    pid_t middle = fork();
    if (middle == 0) {
        setsid();
        pid_t grandchild = fork();
        if (grandchild == 0) {
            execl("/bin/sleep", "sleep", "3002", (char *)NULL);
            _exit(1);
        }
        write(pipefd[1], &grandchild, sizeof grandchild);
        _exit(0);
    }
    pid_t grandchild = 0;
    read(pipefd[0], &grandchild, sizeof grandchild);
    waitpid(middle, NULL, 0);
    fprintf(f, "%d\n%d\n", (int)child, (int)grandchild);
    fclose(f);
}
#endif

#ifdef ORDERED_STAGE
typedef struct shared_state {
    const cvhost_host *host;
    uint64_t next; /* the delivery index the next ordered() call should have */
} shared_state;

static int shared_create(const cvhost_host *host, const cvhost_option_value *options, uint32_t count, void **out, char *error,
                         size_t error_size) {
    (void)options, (void)count, (void)error, (void)error_size;
    shared_state *s = calloc(1, sizeof *s);
    s->host = host;
    *out = s;
    return 0;
}

static int ordered(void *shared, void *instance, const cvhost_frame *frame) {
    shared_state *sh = shared;
    const state *s = instance;
    char json[160];
    snprintf(json, sizeof json, "{\"delivery_index\":%llu,\"expected\":%llu,\"instance\":%u}",
             (unsigned long long)frame->delivery_index, (unsigned long long)sh->next, s->host->instance_index);
    sh->next = frame->delivery_index + 1;
    return s->host->emit(s->host->context, "ordered", json);
}

static int shared_flush(void *shared) {
    shared_state *sh = shared;
    char json[64];
    snprintf(json, sizeof json, "{\"frames\":%llu}", (unsigned long long)sh->next);
    return sh->host->emit(sh->host->context, "ordered.end", json);
}

static void shared_destroy(void *shared) { free(shared); }
#endif

static int create(const cvhost_host *host, const cvhost_option_value *options, uint32_t count, void **out, char *error,
                  size_t error_size) {
#ifdef BREAK_CREATE
    snprintf(error, error_size, "model file /nonexistent/model.bin is missing");
    return -ENOENT;
#endif
#ifdef HANG_IN_CREATE
    for (;;) pause();
#endif
#ifdef ORDERED_STAGE
    if (!CVHOST_HAS_FIELD(host, cvhost_host, shared) || host->shared == NULL) {
        snprintf(error, error_size, "no shared state");
        return -EINVAL;
    }
#endif
#ifdef REQUEST_FRAMES
    {
#ifndef REQUEST_FLAGS
#define REQUEST_FLAGS 0
#endif
        cvhost_frame_request r = {sizeof r, requested[0], requested[1], requested[2], requested[3], requested[4], REQUEST_FLAGS};
        int rc = host->request_frames(host->context, &r);
        if (rc != 0) {
            snprintf(error, error_size, "request_frames returned %d", rc);
            return rc;
        }
    }
#endif
    state *s = calloc(1, sizeof *s);
    s->host = host;
    *out = s;
#ifdef SPAWN_CHILDREN
    spawn_children();
#endif
#ifdef EMIT_FROM_THREAD
    if (host->emit(host->context, "early", "{}") != -EPERM) return -EINVAL;  // create() may not emit
    pthread_t t;
    pthread_create(&t, NULL, emitter, (void *)host);
    pthread_detach(t);
#endif
    return 0;
}

static int process(void *instance, const cvhost_frame *frame) {
    state *s = instance;
#ifdef REQUEST_FRAMES
    {
        cvhost_frame_request again = {sizeof again, 64, 64, CVHOST_RESIZE_STRETCH, 0, 0};
        int rc = s->host->request_frames(s->host->context, &again);  // only create() may ask
        const cvhost_plane *p = &frame->planes[0];
        unsigned bpp = frame->pixel_format == CVHOST_PIXEL_FORMAT_RGB24 ? 3 : 1;
        char full[160] = "";
        const cvhost_frame *f = CVHOST_HAS_FIELD(frame, cvhost_frame, full) ? frame->full : NULL;
        if (f) {
            snprintf(full, sizeof full, ",\"full\":[%u,%u,%u],\"full_has_full\":%s,\"full_source\":[%u,%u],\"full_content\":[%u,%u,%u,%u]",
                     f->width, f->height, f->pixel_format, f->full ? "true" : "false", f->source_width, f->source_height,
                     f->content_x, f->content_y, f->content_width, f->content_height);
            const char *dump = getenv("DUMP_FULL");
            if (dump && frame->sequence == 0) {
                FILE *out = fopen(dump, "wb");
                unsigned row = f->width * (f->pixel_format == CVHOST_PIXEL_FORMAT_RGB24 ? 3 : 1);
                for (unsigned y = 0; out && y < f->height; y++) fwrite(f->planes[0].data + (size_t)y * f->planes[0].stride, 1, row, out);
                if (out) fclose(out);
            }
        }
        // ABI 2.4: the frame's motion regions, when it has them.
        char regions[200] = "";
        if (CVHOST_HAS_FIELD(frame, cvhost_frame, regions) && frame->region_count > 0) {
            size_t at = (size_t)snprintf(regions, sizeof regions, ",\"regions\":[");
            for (uint32_t i = 0; i < frame->region_count && at < sizeof regions; i++) {
                const cvhost_region *r = &frame->regions[i];
                at += (size_t)snprintf(regions + at, sizeof regions - at, "%s[%u,%u,%u,%u]", i ? "," : "", r->x, r->y, r->width, r->height);
            }
            if (at < sizeof regions) snprintf(regions + at, sizeof regions - at, "]");
        }
        char json[800];
        snprintf(json, sizeof json,
                 "{\"width\":%u,\"height\":%u,\"format\":%u,\"source\":[%u,%u],\"content\":[%u,%u,%u,%u],"
                 "\"first\":%u,\"middle\":%u,\"again\":%d%s%s}",
                 frame->width, frame->height, frame->pixel_format, frame->source_width, frame->source_height, frame->content_x,
                 frame->content_y, frame->content_width, frame->content_height, p->data[0],
                 p->data[(size_t)(frame->height / 2) * p->stride + (frame->width / 2) * bpp], rc, full, regions);
        s->host->emit(s->host->context, "frame", json);
    }
#endif
#ifdef ORDERED_STAGE
    usleep((useconds_t)((frame->sequence * 7919) % 5) * 1000); /* instances finish out of order */
#endif
#ifdef EMIT_ESCAPED
    {
        // Text a C plugin has (a decoded code), made a JSON string by the header's helper.
        char escaped[256], json[300];
        cvhost_json_escape(escaped, sizeof escaped, "a \"quoted\" back\\slash\nnew line\ttab \x01 caf\xc3\xa9");
        snprintf(json, sizeof json, "{\"text\":\"%s\"}", escaped);
        s->host->emit(s->host->context, "escaped", json);
        char tiny[8];
        if (cvhost_json_escape(tiny, sizeof tiny, "\n\n\n\n\n") != 10 || strlen(tiny) != 7) return -EINVAL;
    }
#endif
#ifdef EMIT_GARBAGE
    // Everything a careless or hostile plugin might hand the host; only the last is valid.
    s->host->emit(s->host->context, "bad", "{\"a\":\"line\nbreak\"}");
    s->host->emit(s->host->context, "bad", "{\"a\":1}\n{\"b\":2}");
    s->host->emit(s->host->context, "bad", "[1,2,3]");
    s->host->emit(s->host->context, "bad", "{\"a\":\"\xff\xfe\"}");
    s->host->emit(s->host->context, "bad", "{\"a\":");
    s->host->emit(s->host->context, "Bad Type\n", "{}");
    s->host->emit(s->host->context, "bad", NULL);
    s->host->emit(s->host->context, "good", "{ \"text\" : \"tab\\tand \\\"quote\\\" \\u00e9\",\n \"n\": -1.5e3 }");
#endif
#ifdef CRASH_ON_FRAME
    if (frame->sequence == CRASH_ON_FRAME) *(volatile int *)(uintptr_t)frame->width = 1;  // a bad address
#endif
#ifdef LEAK_MB
    {
        size_t n = (size_t)LEAK_MB << 20;
        static char *volatile kept; /* volatile: the compiler may not drop the allocation */
        char *leak = malloc(n);
        if (leak) memset(leak, 1, n); /* touched: resident, not just reserved */
        kept = leak;
    }
#endif
#ifdef ABORT_ON_FRAME
    if (frame->sequence == ABORT_ON_FRAME) abort();
#endif
#ifdef EMIT_FROM_THREAD
    char json[64];
    snprintf(json, sizeof json, "{\"seq\":%llu,\"thread_accepted\":%ld}", (unsigned long long)frame->sequence, accepted_from_thread);
    s->host->emit(s->host->context, "sync", json);
#endif
#ifdef HANG_ON_FRAME
    if (frame->sequence == HANG_ON_FRAME)
        for (;;) pause();
#endif
#ifdef EXIT_ON_FRAME
    if (frame->sequence == EXIT_ON_FRAME) {
#ifdef EXIT_FROM_THREAD
        pthread_t t;
        pthread_create(&t, NULL, exit_now, NULL);
        pthread_join(t, NULL);
#else
        exit(0);
#endif
    }
#endif
#ifdef PRINT_TO_STDOUT
    printf("plugin chatter on frame %llu {\"not\": \"a result\"", (unsigned long long)frame->sequence);
    if (frame->sequence % 3 == 0) printf("\n");
    write(1, "raw write\n", 10);
#ifdef PRINT_FLUSH
    fflush(stdout);
#endif
#endif
    (void)s;
    (void)frame;
    return 0;
}

static void destroy(void *instance) {
#ifdef HANG_IN_DESTROY
    for (;;) pause();
#endif
    free(instance);
}

#ifdef HANG_IN_FLUSH
static int flush(void *instance) {
    (void)instance;
    for (;;) pause();
    return 0;
}
#endif

#ifdef REQUEST_FRAMES
static const uint32_t formats[] = {CVHOST_PIXEL_FORMAT_GRAY8, CVHOST_PIXEL_FORMAT_RGB24};
#else
static const uint32_t formats[] = {CVHOST_PIXEL_FORMAT_GRAY8};
#endif
static const cvhost_option_spec options[] = {
#ifdef BREAK_DEFAULT
    {"level", CVHOST_OPTION_INT, "9", "a level whose default is out of its range", 1, 5, NULL},
#else
    {"level", CVHOST_OPTION_INT, "3", "a level", 1, 5, NULL},
#endif
#ifdef HOST_OPTION_NAME
    {"mirror", CVHOST_OPTION_BOOL, "false", "an option named like the host's own", 0, 0, NULL},
#else
    {"mode", CVHOST_OPTION_ENUM, "fast", "a mode", 0, 0, "fast|slow"},
#endif
};

static const cvhost_capture_hints hints = {.struct_size = sizeof(cvhost_capture_hints)};

#if defined(BREAK_NO_ENTRY)
#define DESCRIPTOR some_other_symbol /* exports a descriptor, under the wrong name */
#elif defined(BREAK_ABI1)
#define DESCRIPTOR descriptor_v1
#else
#define DESCRIPTOR cvhost_plugin
#endif
CVHOST_PLUGIN_EXPORT const cvhost_plugin_descriptor DESCRIPTOR = {
#if defined(BREAK_ABI)
    .struct_size = sizeof(cvhost_plugin_descriptor), .abi_major = CVHOST_PLUGIN_ABI_MAJOR + 1,
#elif !defined(BREAK_NO_HEADER)
    CVHOST_PLUGIN_DESCRIPTOR_HEADER,
#endif
#ifdef BREAK_NAME
    .name = NULL, /* as a name made at run time (C++'s s.c_str()) reads from the file */
#else
    .name = PLUGIN_NAME,
#endif
    .version = "0.0.1",
    .description = "deliberately broken",
    .pixel_formats = formats,
    .pixel_format_count = sizeof formats / sizeof formats[0],
#if defined(BREAK_UNKNOWN_FLAG)
    .flags = 1u << 30, /* a flag from a newer ABI minor version */
#elif defined(ORDERED_STAGE)
    .flags = CVHOST_PLUGIN_FLAG_STATELESS,
#endif
    .hints = &hints,
    .options = options,
#ifdef BREAK_COUNT
    .option_count = 6, /* more than the array holds */
#else
    .option_count = sizeof options / sizeof options[0], /* the frozen 2.0 header has no CVHOST_COUNT */
#endif
#ifndef BREAK_SPEC_SIZE
    .option_spec_size = sizeof(cvhost_option_spec),
#endif
    .create = create,
#ifdef BREAK_PROCESS
    .process = NULL,
#else
    .process = process,
#endif
#ifndef BREAK_DESTROY
    .destroy = destroy,
#endif
#ifdef HANG_IN_FLUSH
    .flush = flush,
#endif
#ifdef ORDERED_STAGE
    .shared_create = shared_create,
    .ordered = ordered,
    .shared_flush = shared_flush,
#ifndef BREAK_ORDERED_STAGE
    .shared_destroy = shared_destroy,
#endif
#endif
};

#ifdef PRINT_TO_STDOUT
__attribute__((constructor)) static void chatter_on_load(void) { printf("loaded!\n"); fflush(stdout); }
#endif

#ifdef BREAK_ABI1
/* How an ABI 1 plugin exported its descriptor: a function. */
CVHOST_PLUGIN_EXPORT const cvhost_plugin_descriptor *cvhost_plugin_entry(void) { return &descriptor_v1; }
#endif

#ifdef CRASH_ON_LOAD
/* A plugin whose code crashes as soon as it is loaded: listing it must not load it. */
__attribute__((constructor)) static void crash_on_load(void) { *(volatile int *)(uintptr_t)8 = 1; }
#endif
