// The `null` plugin: does no vision work. It exists to test and benchmark the host:
// it can take a fixed time per frame (delay_ms), emit a number of results per frame
// (results), and fail every Nth frame (fail_every).
#include <cvhost/plugin.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct null_plugin {
    const cvhost_host *host;
    double delay_ms;
    long results;
    long fail_every;
} null_plugin;

static const uint32_t null_formats[] = {
    // Every format the host knows, so that the null plugin never costs a conversion.
    CVHOST_PIXEL_FORMAT_GRAY8, CVHOST_PIXEL_FORMAT_I420, CVHOST_PIXEL_FORMAT_NV12,
    CVHOST_PIXEL_FORMAT_YUYV,  CVHOST_PIXEL_FORMAT_RGB24, CVHOST_PIXEL_FORMAT_BGR24,
};

static const cvhost_option_spec null_options[] = {
    {"delay_ms", CVHOST_OPTION_DOUBLE, "0", "time to spend on each frame, in milliseconds (sleeps)", 0, 60000, NULL},
    {"results", CVHOST_OPTION_INT, "0", "results to emit for each frame", 0, 1000, NULL},
    {"fail_every", CVHOST_OPTION_INT, "0", "fail processing of every Nth frame (0 = never)", 0, 1000000000, NULL},
};

static int null_create(const cvhost_host *host, const cvhost_option_value *options, uint32_t option_count,
                       void **out_instance, char *error, size_t error_size) {
    null_plugin *self = calloc(1, sizeof *self);
    if (!self) {
        snprintf(error, error_size, "out of memory");
        return -ENOMEM;
    }
    self->host = host;
    // The host has checked types and bounds and passes every option, so these are present and valid.
    self->delay_ms = cvhost_option_double(options, option_count, "delay_ms", 0);
    self->results = (long)cvhost_option_int(options, option_count, "results", 0);
    self->fail_every = (long)cvhost_option_int(options, option_count, "fail_every", 0);
    *out_instance = self;
    return 0;
}

static void sleep_ms(double ms) {
    struct timespec ts = {(time_t)(ms / 1000.0), (long)((ms - (double)(time_t)(ms / 1000.0) * 1000.0) * 1e6)};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
    }
}

static int null_process(void *instance, const cvhost_frame *frame) {
    null_plugin *self = instance;
    if (self->delay_ms > 0) sleep_ms(self->delay_ms);
    if (self->fail_every > 0 && (frame->sequence + 1) % (uint64_t)self->fail_every == 0) return -EIO;
    for (long i = 0; i < self->results; i++) {
        char json[160];
        snprintf(json, sizeof json, "{\"index\":%ld,\"width\":%u,\"height\":%u,\"first_byte\":%u}", i, frame->width,
                 frame->height, (unsigned)frame->planes[0].data[0]);
        self->host->emit(self->host->context, "null", json);
    }
    return 0;
}

static void null_destroy(void *instance) { free(instance); }

static const cvhost_capture_hints hints = {.struct_size = sizeof(cvhost_capture_hints), .focus_range = CVHOST_FOCUS_RANGE_NONE};

CVHOST_PLUGIN_EXPORT const cvhost_plugin_descriptor cvhost_plugin = {
    CVHOST_PLUGIN_DESCRIPTOR_HEADER,
    .name = "null",
    .version = "1.0.0",
    .description = "does nothing, at a chosen cost: for tests and benchmarks of the host",
    .pixel_formats = null_formats,
    .pixel_format_count = sizeof null_formats / sizeof null_formats[0],
    .flags = CVHOST_PLUGIN_FLAG_STATELESS,
    .hints = &hints,
    .options = null_options,
    .option_count = sizeof null_options / sizeof null_options[0],
    .option_spec_size = sizeof(cvhost_option_spec),
    .create = null_create,
    .process = null_process,
    .flush = NULL,
    .destroy = null_destroy,
};

