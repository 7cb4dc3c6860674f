/*
 * A complete cvhost plugin in plain C: reports the mean brightness of every frame, and whether
 * it is darker than a threshold. Built against the public header alone:
 *
 *   cc -shared -fPIC -O2 -fvisibility=hidden -I ../../Sources/CVHostPluginABI/include \
 *      brightness.c -o libcvhost-brightness.so
 *   cvhost run --plugin ./libcvhost-brightness.so:threshold=40 --input testsrc --max-frames 30
 */
#include <cvhost/plugin.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct brightness {
    const cvhost_host *host; // valid until destroy()
    double threshold;
} brightness;

static int brightness_create(const cvhost_host *host, const cvhost_option_value *options, uint32_t count,
                             void **out, char *error, size_t error_size) {
    brightness *self = calloc(1, sizeof *self);
    if (!self) {
        snprintf(error, error_size, "out of memory");
        return -ENOMEM;
    }
    self->host = host;
    // Every declared option is passed, checked by the host against its type and bounds.
    self->threshold = cvhost_option_double(options, count, "threshold", 50);
    *out = self;
    return 0;
}

static int brightness_process(void *instance, const cvhost_frame *frame) {
    brightness *self = instance;
    const cvhost_plane *y = &frame->planes[0]; // GRAY8: one plane of luma, borrowed until we return
    unsigned long long sum = 0;
    for (uint32_t row = 0; row < y->height; row++) {
        const uint8_t *p = y->data + (size_t)row * y->stride;
        for (uint32_t x = 0; x < y->width; x++) sum += p[x];
    }
    double mean = (double)sum / ((double)y->width * y->height);
    char json[96];
    snprintf(json, sizeof json, "{\"mean\":%.2f,\"dark\":%s}", mean, mean < self->threshold ? "true" : "false");
    return self->host->emit(self->host->context, "brightness", json);
}

static void brightness_destroy(void *instance) { free(instance); }

static const uint32_t formats[] = {CVHOST_PIXEL_FORMAT_GRAY8};
static const cvhost_option_spec options[] = {
    {"threshold", CVHOST_OPTION_DOUBLE, "50", "mean luma below which a frame counts as dark", 0, 255, NULL},
};

static const cvhost_capture_hints hints = {.struct_size = sizeof(cvhost_capture_hints), .focus_range = CVHOST_FOCUS_RANGE_NONE};

CVHOST_PLUGIN_EXPORT const cvhost_plugin_descriptor cvhost_plugin = {
    CVHOST_PLUGIN_DESCRIPTOR_HEADER,
    .name = "brightness",
    .version = "1.0.0",
    .description = "mean brightness of each frame (an example plugin in plain C)",
    .pixel_formats = formats,
    .pixel_format_count = 1,
    .flags = CVHOST_PLUGIN_FLAG_STATELESS,
    .hints = &hints,
    .options = options,
    .option_count = 1,
    .option_spec_size = sizeof(cvhost_option_spec),
    .create = brightness_create,
    .process = brightness_process,
    .destroy = brightness_destroy,
};

