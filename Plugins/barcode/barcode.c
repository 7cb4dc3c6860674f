/*
 * The `barcode` plugin: decodes 1D and 2D codes with libzbar.
 *
 * It asks for GRAY8 (the host hands it the Y plane of I420/NV12 frames without a copy) and for
 * the near autofocus range, as Apple advises for machine-readable codes. One result per code
 * (AVMetadataMachineReadableCodeObject and more): symbology, text, raw bytes, quality,
 * orientation, corners and bounds in pixels and normalized.
 *
 * When a frame yields nothing, it can retry the inverted image (light codes on dark) and the
 * mirrored image (codes seen through glass or a mirror). De-duplication (report=new|track)
 * reports a code once while it stays in view and a "barcode.lost" result when it is gone.
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
#include <zbar.h>

#include "barcode_detection.h"
#include "barcode_json.h"
#include "barcode_symbologies.h"
#include "barcode_tracker.h"

typedef enum { REPORT_EVERY, REPORT_NEW, REPORT_TRACK } report_mode;

typedef struct barcode {
    const cvhost_host *host;
    char symbologies[256];
    int density;
    bool retry_inverted, retry_mirrored;
    double roi[4]; /* x, y, w, h, normalized */
    report_mode report;
    int64_t lost_after_ns;
    tracker tracker;
    uint8_t *scratch; /* rows copied for zbar (which takes no stride), and inverted/mirrored copies */
    size_t scratch_size;
    json_buf json;
} barcode;

static const char *find_option(const cvhost_option_value *options, uint32_t count, const char *name) {
    for (uint32_t i = 0; i < count; i++)
        if (strcmp(options[i].name, name) == 0) return options[i].value;
    return "";
}

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

/* A configured zbar scanner. A fresh one is made for every frame: zbar's scanner keeps decoder
 * state from one image to the next (a code's quality then depends on the frame scanned before),
 * and results must not depend on which instance saw which frame. Creating one costs microseconds. */
static zbar_image_scanner_t *new_scanner(const barcode *self, char *bad, size_t bad_size) {
    zbar_image_scanner_t *scanner = zbar_image_scanner_create();
    if (!scanner) {
        snprintf(bad, bad_size, "(out of memory)");
        return NULL;
    }
    if (!symbologies_configure(scanner, self->symbologies, bad, bad_size)) {
        zbar_image_scanner_destroy(scanner);
        return NULL;
    }
    zbar_image_scanner_set_config(scanner, ZBAR_NONE, ZBAR_CFG_X_DENSITY, self->density);
    zbar_image_scanner_set_config(scanner, ZBAR_NONE, ZBAR_CFG_Y_DENSITY, self->density);
    /* Keep binary payloads as bytes; the text field is filled only when they are valid UTF-8. */
    zbar_image_scanner_set_config(scanner, ZBAR_QRCODE, ZBAR_CFG_BINARY, 1);
    return scanner;
}

static int barcode_create(const cvhost_host *host, const cvhost_option_value *options, uint32_t count, void **out,
                          char *error, size_t error_size) {
    barcode *self = calloc(1, sizeof *self);
    if (!self) {
        snprintf(error, error_size, "out of memory");
        return -ENOMEM;
    }
    self->host = host;
    self->retry_inverted = strcmp(find_option(options, count, "inverted"), "true") == 0;
    self->retry_mirrored = strcmp(find_option(options, count, "mirrored"), "true") == 0;
    const char *report = find_option(options, count, "report");
    self->report = strcmp(report, "new") == 0 ? REPORT_NEW : strcmp(report, "track") == 0 ? REPORT_TRACK : REPORT_EVERY;
    self->lost_after_ns = (int64_t)(strtod(find_option(options, count, "lost_after"), NULL) * 1e9);
    if (self->report != REPORT_EVERY && host->instance_count > 1) {
        snprintf(error, error_size, "report=%s follows codes from frame to frame and needs instances=1 (got %u)", report,
                 host->instance_count);
        free(self);
        return -EINVAL;
    }
    if (!parse_roi(find_option(options, count, "roi"), self->roi)) {
        snprintf(error, error_size, "roi=%s is not X:Y:W:H with normalized values (e.g. 0.25:0.25:0.5:0.5)",
                 find_option(options, count, "roi"));
        free(self);
        return -EINVAL;
    }

    snprintf(self->symbologies, sizeof self->symbologies, "%s", find_option(options, count, "symbologies"));
    self->density = atoi(find_option(options, count, "density"));
    char bad[64];
    zbar_image_scanner_t *probe = new_scanner(self, bad, sizeof bad);
    if (!probe) {
        snprintf(error, error_size, "unknown symbology '%s' in symbologies=; known: %s", bad, symbologies_known());
        free(self);
        return -EINVAL;
    }
    zbar_image_scanner_destroy(probe);
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

/* How one scan maps back to frame coordinates. */
typedef struct region {
    uint32_t x0, y0, w, h; /* the scanned rectangle within the frame */
    bool inverted, mirrored;
} region;

static int scan(zbar_image_scanner_t *scanner, const uint8_t *pixels, const region *r, const cvhost_frame *frame,
                detections *found) {
    zbar_image_t *image = zbar_image_create();
    if (!image) return -ENOMEM;
    zbar_image_set_format(image, zbar_fourcc('Y', '8', '0', '0'));
    zbar_image_set_size(image, r->w, r->h);
    zbar_image_set_data(image, pixels, (unsigned long)r->w * r->h, NULL);
    int n = zbar_scan_image(scanner, image);
    if (n < 0) {
        zbar_image_destroy(image);
        return -EIO;
    }
    for (const zbar_symbol_t *s = zbar_image_first_symbol(image); s; s = zbar_symbol_next(s)) {
        detection d = {0};
        d.type = zbar_symbol_get_type(s);
        d.data = (char *)zbar_symbol_get_data(s);
        d.length = zbar_symbol_get_data_length(s);
        d.quality = zbar_symbol_get_quality(s);
        d.orientation = zbar_symbol_get_orientation(s);
        d.inverted = r->inverted;
        d.mirrored = r->mirrored;
        unsigned points = zbar_symbol_get_loc_size(s);
        double minx = 1e18, miny = 1e18, maxx = -1e18, maxy = -1e18;
        for (unsigned i = 0; i < points; i++) {
            double x = zbar_symbol_get_loc_x(s, i), y = zbar_symbol_get_loc_y(s, i);
            if (r->mirrored) x = (double)r->w - 1 - x;
            x += r->x0;
            y += r->y0;
            if (points == 4) {
                /* zbar goes TL, BL, BR, TR of the code (counter-clockwise); report TL, TR, BR, BL. */
                static const int clockwise[4] = {0, 3, 2, 1};
                d.corners[clockwise[i]][0] = x;
                d.corners[clockwise[i]][1] = y;
            }
            if (x < minx) minx = x;
            if (y < miny) miny = y;
            if (x > maxx) maxx = x;
            if (y > maxy) maxy = y;
        }
        if (points == 0) continue;
        d.bounds[0] = minx;
        d.bounds[1] = miny;
        d.bounds[2] = maxx - minx + 1;
        d.bounds[3] = maxy - miny + 1;
        if (points != 4) { /* a linear code: zbar gives scan points; report their bounding box */
            double box[4][2] = {{minx, miny}, {maxx + 1, miny}, {maxx + 1, maxy + 1}, {minx, maxy + 1}};
            memcpy(d.corners, box, sizeof box);
        }
        if (detections_add(found, &d, frame->width, frame->height) != 0) break;
    }
    zbar_image_destroy(image); /* detections_add copied what it needs */
    return n;
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
    region r = {0};
    r.x0 = (uint32_t)(self->roi[0] * frame->width);
    r.y0 = (uint32_t)(self->roi[1] * frame->height);
    r.w = (uint32_t)(self->roi[2] * frame->width);
    r.h = (uint32_t)(self->roi[3] * frame->height);
    if (r.x0 + r.w > frame->width) r.w = frame->width - r.x0;
    if (r.y0 + r.h > frame->height) r.h = frame->height - r.y0;
    if (r.w < 8 || r.h < 8) return 0;

    /* zbar takes rows with no padding: use the plane as it is when it has none, else copy rows. */
    const uint8_t *pixels;
    if (y->stride == r.w && r.x0 == 0) {
        pixels = y->data + (size_t)r.y0 * y->stride;
    } else {
        uint8_t *copy = scratch(self, (size_t)r.w * r.h * 2);
        if (!copy) return -ENOMEM;
        for (uint32_t row = 0; row < r.h; row++)
            memcpy(copy + (size_t)row * r.w, y->data + (size_t)(r.y0 + row) * y->stride + r.x0, r.w);
        pixels = copy;
    }

    char bad[64];
    zbar_image_scanner_t *scanner = new_scanner(self, bad, sizeof bad);
    if (!scanner) return -ENOMEM;
    detections found;
    detections_init(&found);
    int rc = 0;
    int n = scan(scanner, pixels, &r, frame, &found);
    if (n == 0 && (self->retry_inverted || self->retry_mirrored)) {
        uint8_t *buf = scratch(self, (size_t)r.w * r.h * 2);
        if (!buf) {
            zbar_image_scanner_destroy(scanner);
            detections_free(&found);
            return -ENOMEM;
        }
        /* The source rows may live in the first half of scratch: variants go in the second half. */
        uint8_t *variant = buf + (size_t)r.w * r.h;
        const uint8_t *src = pixels == self->scratch ? buf : pixels;
        if (self->retry_inverted) {
            for (size_t i = 0; i < (size_t)r.w * r.h; i++) variant[i] = (uint8_t)(255 - src[i]);
            region inv = r;
            inv.inverted = true;
            n = scan(scanner, variant, &inv, frame, &found);
        }
        if (n == 0 && self->retry_mirrored) {
            for (uint32_t row = 0; row < r.h; row++) {
                const uint8_t *s = src + (size_t)row * r.w;
                uint8_t *d = variant + (size_t)row * r.w;
                for (uint32_t x = 0; x < r.w; x++) d[x] = s[r.w - 1 - x];
            }
            region mir = r;
            mir.mirrored = true;
            n = scan(scanner, variant, &mir, frame, &found);
        }
    }
    zbar_image_scanner_destroy(scanner);
    if (n < 0) rc = n;

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
    {"symbologies", CVHOST_OPTION_STRING, "default",
     "codes to look for, joined with '+' (e.g. qrcode+ean13); 'default' = all but those that misread noise, 'all' = every one zbar knows",
     0, 0, NULL},
    /* Retries are off by default: each one rescans every frame that yields nothing, and on a live
     * camera that is most frames (zbar's and ZXing's tools leave them off too). */
    {"inverted", CVHOST_OPTION_BOOL, "false",
     "when a frame yields nothing, retry it inverted (light codes on dark, e.g. dark-mode screens)", 0, 0, NULL},
    {"mirrored", CVHOST_OPTION_BOOL, "false", "when a frame yields nothing, retry it mirrored left to right (codes seen in a mirror)",
     0, 0, NULL},
    {"roi", CVHOST_OPTION_STRING, "0:0:1:1", "region of interest X:Y:W:H, normalized to the frame (like rectOfInterest)", 0, 0,
     NULL},
    {"density", CVHOST_OPTION_INT, "1", "scan every Nth row and column (higher is faster, finds fewer small codes)", 1, 16, NULL},
    {"report", CVHOST_OPTION_ENUM, "every",
     "every: each code in each frame; new: once while in view, then barcode.lost; track: new, barcode.update, barcode.lost", 0,
     0, "every|new|track"},
    {"lost_after", CVHOST_OPTION_DOUBLE, "0.5", "seconds (media time) out of view before barcode.lost (report=new|track)", 0,
     3600, NULL},
};

static const cvhost_plugin_descriptor barcode_descriptor = {
    .abi_version = CVHOST_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(cvhost_plugin_descriptor),
    .name = "barcode",
    .version = "1.0.0",
    .description = "barcodes and QR codes with libzbar: text, bytes, corners, bounds, quality, orientation",
    .pixel_formats = barcode_formats,
    .pixel_format_count = 1,
    .flags = CVHOST_PLUGIN_FLAG_STATELESS, /* with report=every; the stateful modes refuse instances > 1 */
    .hints = {.struct_size = sizeof(cvhost_capture_hints), .focus_range = CVHOST_FOCUS_RANGE_NEAR},
    .options = barcode_options,
    .option_count = sizeof barcode_options / sizeof barcode_options[0],
    .option_spec_size = sizeof(cvhost_option_spec),
    .create = barcode_create,
    .process = barcode_process,
    .flush = barcode_flush,
    .destroy = barcode_destroy,
};

CVHOST_PLUGIN_EXPORT const cvhost_plugin_descriptor *cvhost_plugin_entry(void) { return &barcode_descriptor; }
