// A test plugin: asks for one pixel format (PROBE_FORMAT, a cvhost_pixel_format; RGB24 unless
// defined), emits what each frame says of itself (format, size, colour range and matrix, a checksum
// of its pixels, and what its planes' descriptors allow), and writes the first frame's pixels,
// packed, to the file its `dump` option names.
#include <cvhost/plugin.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#ifndef PROBE_FORMAT
#define PROBE_FORMAT CVHOST_PIXEL_FORMAT_RGB24
#endif

typedef struct probe {
    const cvhost_host *host;
    char dump[1024];
    int dumped;
} probe;

static const uint32_t probe_formats[] = {PROBE_FORMAT};

static const cvhost_option_spec probe_options[] = {
    {"dump", CVHOST_OPTION_STRING, "", "file to write the first frame's pixels to (packed rows)", 0, 0, NULL},
};

static int probe_create(const cvhost_host *host, const cvhost_option_value *options, uint32_t option_count, void **out,
                        char *error, size_t error_size) {
    probe *self = calloc(1, sizeof *self);
    if (!self) return -ENOMEM;
    self->host = host;
    for (uint32_t i = 0; i < option_count; i++)
        if (strcmp(options[i].name, "dump") == 0) snprintf(self->dump, sizeof self->dump, "%s", options[i].value);
    (void)error, (void)error_size;
    *out = self;
    return 0;
}

static uint32_t row_bytes(const cvhost_frame *frame, const cvhost_plane *pl) {
    return frame->pixel_format == CVHOST_PIXEL_FORMAT_RGB24 || frame->pixel_format == CVHOST_PIXEL_FORMAT_BGR24 ? pl->width * 3
                                                                                                                  : pl->width;
}

// FNV-1a over every plane's visible bytes, row by row.
static uint64_t checksum(const cvhost_frame *frame) {
    uint64_t h = 1469598103934665603ull;
    for (uint32_t p = 0; p < frame->plane_count; p++) {
        const cvhost_plane *pl = &frame->planes[p];
        for (uint32_t y = 0; y < pl->height; y++) {
            const uint8_t *row = pl->data + (size_t)y * pl->stride;
            for (uint32_t x = 0; x < row_bytes(frame, pl); x++) h = (h ^ row[x]) * 1099511628211ull;
        }
    }
    return h;
}

// What plane 0's descriptor allows: -1 no descriptor (cvhost's own process), 0 read-only
// (mapping it at `offset` shows the same bytes as `data`), 1 writable (it must never be), 2 other.
static int descriptor_access(const cvhost_plane *pl) {
    if (pl->fd < 0) return -1;
    long page = 4096;
    uint64_t start = pl->offset & ~(uint64_t)(page - 1);
    size_t span = (size_t)(pl->offset - start + pl->length);
    void *w = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_SHARED, pl->fd, (off_t)start);
    if (w != MAP_FAILED) {
        munmap(w, span);
        return 1;
    }
    uint8_t *r = mmap(NULL, span, PROT_READ, MAP_SHARED, pl->fd, (off_t)start);
    if (r == MAP_FAILED) return 2;
    int same = memcmp(r + (pl->offset - start), pl->data, pl->length) == 0;
    munmap(r, span);
    return same ? 0 : 2;
}

static int probe_process(void *instance, const cvhost_frame *frame) {
    probe *self = instance;
    int has_colour = CVHOST_HAS_FIELD(frame, cvhost_frame, color_matrix);
    char json[320];
    snprintf(json, sizeof json,
             "{\"pixel_format\":%u,\"width\":%u,\"height\":%u,\"color_range\":%d,\"color_matrix\":%d,\"checksum\":\"%016llx\","
             "\"descriptor\":%d}",
             frame->pixel_format, frame->width, frame->height, has_colour ? (int)frame->color_range : -1,
             has_colour ? (int)frame->color_matrix : -1, (unsigned long long)checksum(frame), descriptor_access(&frame->planes[0]));
    self->host->emit(self->host->context, "probe", json);
    if (self->dump[0] && !self->dumped) {
        self->dumped = 1;
        FILE *f = fopen(self->dump, "wb");
        if (!f) return -errno;
        for (uint32_t p = 0; p < frame->plane_count; p++) {
            const cvhost_plane *pl = &frame->planes[p];
            for (uint32_t y = 0; y < pl->height; y++) fwrite(pl->data + (size_t)y * pl->stride, 1, row_bytes(frame, pl), f);
        }
        fclose(f);
    }
    return 0;
}

static void probe_destroy(void *instance) { free(instance); }

CVHOST_PLUGIN_EXPORT const cvhost_plugin_descriptor cvhost_plugin = {
    CVHOST_PLUGIN_DESCRIPTOR_HEADER,
    .name = PLUGIN_NAME,
    .version = "1.0.0",
    .description = "test plugin: reports each frame's format and colour, dumps the first",
    .pixel_formats = probe_formats,
    .pixel_format_count = 1,
    .options = probe_options,
    .option_count = 1,
    .option_spec_size = sizeof(cvhost_option_spec),
    .create = probe_create,
    .process = probe_process,
    .destroy = probe_destroy,
};

