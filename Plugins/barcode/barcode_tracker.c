#include "barcode_tracker.h"

#include <stdlib.h>
#include <string.h>

void tracker_init(tracker *t) {
    memset(t, 0, sizeof *t);
    t->next_id = 1;
}

tracked *tracker_see(tracker *t, const detection *d, const cvhost_frame *frame) {
    for (size_t i = 0; i < t->count; i++) {
        tracked *e = &t->items[i];
        if (e->symbology == d->symbology && e->length == d->length && memcmp(e->data, d->data, d->length) == 0) {
            if (e->last_seq == frame->sequence && e->frames_seen > 0) return NULL;
            e->last_seq = frame->sequence;
            e->last_pts = frame->presentation_time_ns;
            e->frames_seen++;
            return e;
        }
    }
    if (t->count == t->capacity) {
        size_t grown = t->capacity ? t->capacity * 2 : 8;
        tracked *items = realloc(t->items, grown * sizeof *items);
        if (!items) return NULL;
        t->items = items;
        t->capacity = grown;
    }
    char *copy = malloc((size_t)d->length + 1);
    char *text = d->text ? strdup(d->text) : NULL;
    if (!copy || (d->text && !text)) {
        free(copy);
        free(text);
        return NULL;
    }
    memcpy(copy, d->data, (size_t)d->length + 1);
    tracked *e = &t->items[t->count++];
    *e = (tracked){.id = t->next_id++, .symbology = d->symbology, .data = copy, .length = d->length, .text = text,
                   .binary = d->binary, .first_seq = frame->sequence, .last_seq = frame->sequence, .frames_seen = 1,
                   .last_pts = frame->presentation_time_ns};
    return e;
}

tracked *tracker_next_lost(tracker *t, int64_t now_pts, int64_t lost_after_ns) {
    for (size_t i = 0; i < t->count; i++)
        if (now_pts - lost_after_ns > t->items[i].last_pts) return &t->items[i];
    return NULL;
}

void tracker_remove(tracker *t, tracked *entry) {
    free(entry->data);
    free(entry->text);
    size_t i = (size_t)(entry - t->items);
    t->items[i] = t->items[--t->count];
}

void tracker_free(tracker *t) {
    for (size_t i = 0; i < t->count; i++) {
        free(t->items[i].data);
        free(t->items[i].text);
    }
    free(t->items);
    memset(t, 0, sizeof *t);
}
