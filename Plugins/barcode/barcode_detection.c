#include "barcode_detection.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void detections_init(detections *list) { memset(list, 0, sizeof *list); }

int detections_add(detections *list, const detection *d, uint32_t frame_width, uint32_t frame_height) {
    /* The same code found twice in one frame (zbar can report a symbol per scan direction) counts once. */
    for (size_t i = 0; i < list->count; i++) {
        const detection *o = &list->items[i];
        if (o->type == d->type && o->length == d->length && memcmp(o->data, d->data, d->length) == 0 &&
            o->bounds[0] < d->bounds[0] + d->bounds[2] && d->bounds[0] < o->bounds[0] + o->bounds[2] &&
            o->bounds[1] < d->bounds[1] + d->bounds[3] && d->bounds[1] < o->bounds[1] + o->bounds[3])
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
    if (!copy) return -ENOMEM;
    memcpy(copy, d->data, d->length);
    copy[d->length] = '\0';
    detection *slot = &list->items[list->count++];
    *slot = *d;
    slot->data = copy;
    slot->frame_width = frame_width;
    slot->frame_height = frame_height;
    return 0;
}

void detections_free(detections *list) {
    for (size_t i = 0; i < list->count; i++) free(list->items[i].data);
    free(list->items);
    memset(list, 0, sizeof *list);
}
