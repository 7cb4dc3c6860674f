/*
 * The `barcode` plugin: decodes 1D and 2D codes with two engines, libzbar and zxing-cpp.
 *
 * It asks for GRAY8 (the host hands it the Y plane of I420/NV12 frames without a copy) and for
 * the near autofocus range, as Apple advises for machine-readable codes. One result per code
 * (AVMetadataMachineReadableCodeObject and more): symbology, text, raw bytes, the engine that
 * read it, quality, orientation, corners and bounds in pixels and normalized, and what zxing
 * tells beyond that (error-correction level, content type, ECI, structured append).
 *
 * engine= picks the readers: zxing-cpp reads more codes in real photos and the 2D symbologies
 * zbar lacks (DataMatrix, Aztec, PDF417); zbar reads some damaged linear codes zxing misses. The
 * default (auto) and its cost are measured in benchmarks/barcode_photos.py.
 *
 * When a frame yields nothing, it retries the inverted image (light codes on dark) and, if
 * asked, the mirrored image. De-duplication (report=new|track) reports a code once while it
 * stays in view and a "barcode.lost" result when it is gone.
 *
 * Threading: an instance is used by one thread at a time (the ABI's promise); nothing is
 * shared between instances, so with report=every the plugin is stateless and may run as
 * parallel instances.
 */
#include <cvhost/plugin.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "barcode_detection.h"
#include "barcode_engine.h"
#include "barcode_json.h"
#include "barcode_symbologies.h"
#include "barcode_tracker.h"

typedef enum { REPORT_EVERY, REPORT_NEW, REPORT_TRACK } report_mode;

/* Which engines read a frame. */
typedef enum {
    ENGINES_ZBAR,  /* zbar only */
    ENGINES_ZXING, /* zxing only */
    ENGINES_BOTH,  /* both, on every frame: the union of what they read */
    ENGINES_AUTO,  /* zxing on every frame; zbar too where zxing found nothing */
} engine_mode;

typedef struct barcode {
    const cvhost_host *host;
    engine_mode engines;
    symbology_set zbar_symbologies, zxing_symbologies; /* what each engine looks for */
    int density;
    bool try_harder;
    bool retry_inverted, retry_mirrored;
    double roi[4]; /* x, y, w, h, normalized */
    report_mode report;
    int64_t lost_after_ns;
    tracker tracker;
    uint8_t *scratch; /* [contiguous rows for zbar | an inverted or mirrored copy] */
    size_t scratch_size;
    json_buf json;
} barcode;

/* Parses "x:y:w:h" (normalized); returns false unless 4 numbers within 0..1 with w, h > 0. */
static bool parse_roi(const char *text, double roi[4]) {
    char *end;
    const char *p = text;
    for (int i = 0; i < 4; i++) {
        roi[i] = strtod(p, &end);
        if (end == p) return false;
        p = end;
        if (i < 3) {
            if (*p != ':') return false;
            p++;
        }
    }
    return *p == '\0' && roi[0] >= 0 && roi[1] >= 0 && roi[2] > 0 && roi[3] > 0 && roi[0] + roi[2] <= 1.0 + 1e-9 &&
           roi[1] + roi[3] <= 1.0 + 1e-9;
}

static int barcode_create(const cvhost_host *host, const cvhost_option_value *options, uint32_t count, void **out,
                          char *error, size_t error_size) {
    barcode *self = calloc(1, sizeof *self);
    if (!self) {
        snprintf(error, error_size, "out of memory");
        return -ENOMEM;
    }
    self->host = host;
    const char *engine = cvhost_option(options, count, "engine");
    self->engines = strcmp(engine, "zbar") == 0    ? ENGINES_ZBAR
                    : strcmp(engine, "zxing") == 0 ? ENGINES_ZXING
                    : strcmp(engine, "both") == 0  ? ENGINES_BOTH
                                                   : ENGINES_AUTO;
    self->try_harder = cvhost_option_bool(options, count, "try_harder", 1);
    self->retry_inverted = cvhost_option_bool(options, count, "inverted", 1);
    self->retry_mirrored = cvhost_option_bool(options, count, "mirrored", 0);
    const char *report = cvhost_option(options, count, "report");
    self->report = strcmp(report, "new") == 0 ? REPORT_NEW : strcmp(report, "track") == 0 ? REPORT_TRACK : REPORT_EVERY;
    self->lost_after_ns = (int64_t)(cvhost_option_double(options, count, "lost_after", 0.5) * 1e9);
    if (self->report != REPORT_EVERY && host->instance_count > 1) {
        snprintf(error, error_size, "report=%s follows codes from frame to frame and needs instances=1 (got %u)", report,
                 host->instance_count);
        free(self);
        return CVHOST_ERROR_OPTION_VALUE; /* options that do not go together: exit 18 */
    }
    const char *roi = cvhost_option(options, count, "roi");
    if (!parse_roi(roi, self->roi)) {
        snprintf(error, error_size, "roi=%s is not X:Y:W:H with normalized values within the frame (e.g. 0.25:0.25:0.5:0.5)", roi);
        free(self);
        return CVHOST_ERROR_OPTION_VALUE;
    }

    const char *spec = cvhost_option(options, count, "symbologies");
    symbology_set wanted, named;
    char bad[64];
    if (!symbologies_parse(spec, &wanted, &named, bad, sizeof bad)) {
        snprintf(error, error_size, "unknown symbology '%s' in symbologies=%s; known: default, all, %s", bad, spec,
                 symbologies_known());
        free(self);
        return CVHOST_ERROR_OPTION_VALUE;
    }
    unsigned engines = self->engines == ENGINES_ZBAR    ? 1u << ENGINE_ZBAR
                       : self->engines == ENGINES_ZXING ? 1u << ENGINE_ZXING
                                                        : (1u << ENGINE_ZBAR) | (1u << ENGINE_ZXING);
    char unreadable[256];
    if (symbologies_unreadable(named, engines, unreadable, sizeof unreadable)) {
        snprintf(error, error_size, "engine=%s cannot read %s: use engine=auto (zxing reads datamatrix, aztec, microqr, maxicode; "
                 "zbar reads isbn10, isbn13, ean2, ean5, sqcode)", engine, unreadable);
        free(self);
        return CVHOST_ERROR_OPTION_VALUE;
    }
    bool with_zxing = engines & (1u << ENGINE_ZXING);
    if (engines & (1u << ENGINE_ZBAR)) self->zbar_symbologies = symbologies_for_engine(wanted, named, ENGINE_ZBAR, with_zxing);
    if (with_zxing) self->zxing_symbologies = symbologies_for_engine(wanted, named, ENGINE_ZXING, with_zxing);
    self->density = (int)cvhost_option_int(options, count, "density", 1);
    tracker_init(&self->tracker);
    *out = self;
    return 0;
}

static uint8_t *scratch(barcode *self, size_t size) {
    if (size > self->scratch_size) {
        uint8_t *grown = realloc(self->scratch, size);
        if (!grown) return NULL;
        self->scratch = grown;
        self->scratch_size = size;
    }
    return self->scratch;
}

/* Runs the engines on one picture, as engine= says. Returns the number of codes found, or a
 * negative errno. zbar takes no stride: when the picture has one, zbar reads a copy of its rows
 * made in the first half of scratch. */
static int read_picture(barcode *self, const scan_image *picture, const scan_region *r, detections *found) {
    int zx = 0, zb = 0;
    if (self->engines != ENGINES_ZBAR) {
        zx = zxing_engine_scan(self->zxing_symbologies, self->try_harder, picture, r, found);
        if (zx < 0) return zx;
    }
    bool run_zbar = self->engines == ENGINES_ZBAR || self->engines == ENGINES_BOTH || (self->engines == ENGINES_AUTO && zx == 0);
    if (run_zbar && self->zbar_symbologies) {
        scan_image rows = *picture;
        if (picture->stride != picture->width) {
            uint8_t *copy = scratch(self, (size_t)picture->width * picture->height * 2);
            if (!copy) return -ENOMEM;
            for (uint32_t row = 0; row < picture->height; row++)
                memcpy(copy + (size_t)row * picture->width, picture->pixels + (size_t)row * picture->stride, picture->width);
            rows.pixels = copy;
            rows.stride = picture->width;
        }
        zb = zbar_engine_scan(self->zbar_symbologies, self->density, &rows, r, found);
        if (zb < 0) return zb;
    }
    return zx + zb;
}

/* Reading order: top to bottom, then left to right (by the top-left of the bounds), whichever
 * engine found a code first. */
static int reading_order(const void *a, const void *b) {
    const detection *p = a, *q = b;
    if (p->bounds[1] != q->bounds[1]) return p->bounds[1] < q->bounds[1] ? -1 : 1;
    if (p->bounds[0] != q->bounds[0]) return p->bounds[0] < q->bounds[0] ? -1 : 1;
    return 0;
}

/* Emits barcode.lost for, and forgets, every code unseen since before now_pts - lost_after_ns. */
static void emit_lost(barcode *self, int64_t now_pts, int64_t lost_after_ns) {
    tracked *gone;
    while ((gone = tracker_next_lost(&self->tracker, now_pts, lost_after_ns))) {
        if (json_lost(&self->json, gone) == 0) self->host->emit(self->host->context, "barcode.lost", self->json.text);
        tracker_remove(&self->tracker, gone);
    }
}

static int barcode_process(void *instance, const cvhost_frame *frame) {
    barcode *self = instance;
    const cvhost_plane *y = &frame->planes[0];
    scan_region r = {.frame_width = frame->width, .frame_height = frame->height};
    r.x0 = (uint32_t)(self->roi[0] * frame->width);
    r.y0 = (uint32_t)(self->roi[1] * frame->height);
    uint32_t w = (uint32_t)(self->roi[2] * frame->width), h = (uint32_t)(self->roi[3] * frame->height);
    if (r.x0 + w > frame->width) w = frame->width - r.x0;
    if (r.y0 + h > frame->height) h = frame->height - r.y0;
    if (w < 8 || h < 8) return 0;
    /* The region, read in place: zxing takes the plane's stride; zbar gets rows copied if needed. */
    scan_image picture = {y->data + (size_t)r.y0 * y->stride + r.x0, w, h, y->stride};

    detections found;
    detections_init(&found);
    int n = read_picture(self, &picture, &r, &found);
    if (n == 0 && (self->retry_inverted || self->retry_mirrored)) {
        /* Variants go in the second half of scratch: the first may hold zbar's copy of the rows. */
        uint8_t *buf = scratch(self, (size_t)w * h * 2);
        if (!buf) {
            detections_free(&found);
            return -ENOMEM;
        }
        uint8_t *variant = buf + (size_t)w * h;
        scan_image turned = {variant, w, h, w};
        if (self->retry_inverted) {
            for (uint32_t row = 0; row < h; row++) {
                const uint8_t *s = picture.pixels + (size_t)row * picture.stride;
                uint8_t *d = variant + (size_t)row * w;
                for (uint32_t x = 0; x < w; x++) d[x] = (uint8_t)(255 - s[x]);
            }
            scan_region inv = r;
            inv.inverted = true;
            n = read_picture(self, &turned, &inv, &found);
        }
        if (n == 0 && self->retry_mirrored) {
            for (uint32_t row = 0; row < h; row++) {
                const uint8_t *s = picture.pixels + (size_t)row * picture.stride;
                uint8_t *d = variant + (size_t)row * w;
                for (uint32_t x = 0; x < w; x++) d[x] = s[w - 1 - x];
            }
            scan_region mir = r;
            mir.mirrored = true;
            n = read_picture(self, &turned, &mir, &found);
        }
    }
    int rc = n < 0 ? n : 0;
    qsort(found.items, found.count, sizeof *found.items, reading_order);

    /* A new picture: the codes of the last one are gone. */
    if (self->report != REPORT_EVERY && (frame->flags & CVHOST_FRAME_FLAG_INDEPENDENT)) emit_lost(self, INT64_MAX, 0);
    for (size_t i = 0; i < found.count; i++) {
        detection *d = &found.items[i];
        const char *type = "barcode";
        if (self->report != REPORT_EVERY) {
            tracked *t = tracker_see(&self->tracker, d, frame);
            if (!t) continue;
            d->id = t->id;
            if (t->frames_seen > 1) {
                if (self->report != REPORT_TRACK) continue;
                type = "barcode.update";
            }
        }
        if (json_detection(&self->json, d) == 0) self->host->emit(self->host->context, type, self->json.text);
    }
    if (self->report != REPORT_EVERY) emit_lost(self, frame->presentation_time_ns, self->lost_after_ns);
    detections_free(&found);
    return rc;
}

/* End of stream: every code still in view is reported lost, so that each "new" has its "lost". */
static int barcode_flush(void *instance) {
    barcode *self = instance;
    if (self->report != REPORT_EVERY) emit_lost(self, INT64_MAX, 0);
    return 0;
}

static void barcode_destroy(void *instance) {
    barcode *self = instance;
    tracker_free(&self->tracker);
    json_free(&self->json);
    free(self->scratch);
    free(self);
}

static const uint32_t barcode_formats[] = {CVHOST_PIXEL_FORMAT_GRAY8};

static const cvhost_option_spec barcode_options[] = {
    {"engine", CVHOST_OPTION_ENUM, "auto",
     "auto: zxing-cpp on every frame, zbar too where it found nothing; both: both on every frame; zbar; zxing", 0, 0,
     "auto|both|zbar|zxing"},
    {"symbologies", CVHOST_OPTION_STRING, "default",
     "codes to look for, joined with '+' (e.g. qrcode+ean13): qrcode, microqr, datamatrix, aztec, pdf417, maxicode*, ean13, "
     "ean8, upca, upce, isbn10*, isbn13*, ean2*, ean5*, code128, code39, code93, codabar, i25*, databar*, databar_exp*, "
     "sqcode*; 'default' = all but those marked * (they misread noise or re-label others), 'all' = every one",
     0, 0, NULL},
    {"inverted", CVHOST_OPTION_BOOL, "true",
     "when a frame yields nothing, retry it inverted (light codes on dark, e.g. dark-mode screens)", 0, 0, NULL},
    {"mirrored", CVHOST_OPTION_BOOL, "false", "when a frame yields nothing, retry it mirrored left to right (codes seen in a mirror)",
     0, 0, NULL},
    /* On by default: on the corpus video it decodes 695 of 780 codes instead of 364, at 18 instead
     * of 6 CPU-ms a 720p frame (zbar: 694 at 30 ms); on photos it finds DataMatrix and Aztec codes. */
    {"try_harder", CVHOST_OPTION_BOOL, "true",
     "zxing: search harder (more scan lines, linear codes turned 90 degrees, 2D codes in busy pictures); false is about 3x faster",
     0, 0, NULL},
    {"roi", CVHOST_OPTION_STRING, "0:0:1:1", "region of interest X:Y:W:H, normalized to the frame (like rectOfInterest)", 0, 0,
     NULL},
    {"density", CVHOST_OPTION_INT, "1", "zbar: scan every Nth row and column (higher is faster, finds fewer small codes)", 1, 16,
     NULL},
    {"report", CVHOST_OPTION_ENUM, "every",
     "every: each code in each frame; new: once while in view, then barcode.lost; track: new, barcode.update, barcode.lost", 0,
     0, "every|new|track"},
    {"lost_after", CVHOST_OPTION_DOUBLE, "0.5", "seconds (media time) out of view before barcode.lost (report=new|track)", 0,
     3600, NULL},
};

static const cvhost_capture_hints hints = {.struct_size = sizeof(cvhost_capture_hints), .focus_range = CVHOST_FOCUS_RANGE_NEAR};

CVHOST_PLUGIN_EXPORT const cvhost_plugin_descriptor cvhost_plugin = {
    CVHOST_PLUGIN_DESCRIPTOR_HEADER,
    .name = "barcode",
    .version = "2.0.0",
    .description = "1D and 2D codes (QR, DataMatrix, Aztec, PDF417, EAN, Code 128...) with zxing-cpp and libzbar",
    .pixel_formats = barcode_formats,
    .pixel_format_count = 1,
    .flags = CVHOST_PLUGIN_FLAG_STATELESS, /* with report=every; the stateful modes refuse instances > 1 */
    .hints = &hints,
    .options = barcode_options,
    .option_count = sizeof barcode_options / sizeof barcode_options[0],
    .option_spec_size = sizeof(cvhost_option_spec),
    .create = barcode_create,
    .process = barcode_process,
    .flush = barcode_flush,
    .destroy = barcode_destroy,
};

