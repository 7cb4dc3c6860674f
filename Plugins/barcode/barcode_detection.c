#include "barcode_detection.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void detections_init(detections *list) { memset(list, 0, sizeof *list); }

static bool overlap(const double a[4], const double b[4]) {
    return a[0] < b[0] + b[2] && b[0] < a[0] + a[2] && a[1] < b[1] + b[3] && b[1] < a[1] + a[3];
}

int detections_add(detections *list, const detection *d, uint32_t frame_width, uint32_t frame_height) {
    for (size_t i = 0; i < list->count; i++) {
        const detection *o = &list->items[i];
        /* Engines may name one code differently (zbar's isbn13 is zxing's ean13): across
         * engines the bytes and the place decide. */
        bool same_kind = o->symbology == d->symbology || o->engine != d->engine;
        if (same_kind && o->length == d->length && memcmp(o->data, d->data, d->length) == 0 && overlap(o->bounds, d->bounds))
            return 0;
    }
    if (list->count == list->capacity) {
        size_t grown = list->capacity ? list->capacity * 2 : 8;
        detection *items = realloc(list->items, grown * sizeof *items);
        if (!items) return -ENOMEM;
        list->items = items;
        list->capacity = grown;
    }
    char *copy = malloc((size_t)d->length + 1);
    char *text = d->text ? strdup(d->text) : NULL;
    if (!copy || (d->text && !text)) {
        free(copy);
        free(text);
        return -ENOMEM;
    }
    memcpy(copy, d->data, d->length);
    copy[d->length] = '\0';
    detection *slot = &list->items[list->count++];
    *slot = *d;
    slot->data = copy;
    slot->text = text;
    slot->frame_width = frame_width;
    slot->frame_height = frame_height;
    return 0;
}

void detections_free(detections *list) {
    for (size_t i = 0; i < list->count; i++) {
        free(list->items[i].data);
        free(list->items[i].text);
    }
    free(list->items);
    memset(list, 0, sizeof *list);
}

void detection_set_geometry(detection *d, const double (*points)[2], unsigned count) {
    double minx = 1e18, miny = 1e18, maxx = -1e18, maxy = -1e18;
    for (unsigned i = 0; i < count; i++) {
        if (points[i][0] < minx) minx = points[i][0];
        if (points[i][1] < miny) miny = points[i][1];
        if (points[i][0] > maxx) maxx = points[i][0];
        if (points[i][1] > maxy) maxy = points[i][1];
    }
    if (count == 0) minx = miny = maxx = maxy = 0;
    d->bounds[0] = minx;
    d->bounds[1] = miny;
    d->bounds[2] = maxx - minx + 1;
    d->bounds[3] = maxy - miny + 1;
    if (count == 4 && (maxx - minx >= 2 && maxy - miny >= 2)) {
        memcpy(d->corners, points, sizeof d->corners);
    } else { /* a linear code (scan points, or a scan line): the box around them */
        double box[4][2] = {{minx, miny}, {maxx + 1, miny}, {maxx + 1, maxy + 1}, {minx, maxy + 1}};
        memcpy(d->corners, box, sizeof box);
    }
}
