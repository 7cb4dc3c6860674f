/* Follows codes from frame to frame for report=new|track: a code is one symbology and payload;
 * it is lost when unseen for longer than lost_after (media time). */
#ifndef BARCODE_TRACKER_H
#define BARCODE_TRACKER_H
#include <cvhost/plugin.h>
#include <stdint.h>

#include "barcode_detection.h"

typedef struct tracked {
    uint64_t id;
    symbology_id symbology;
    char *data;     /* the payload as the detection had it (owned) */
    unsigned length;
    char *text;     /* owned, or NULL (see detection.text) */
    bool binary;
    uint64_t first_seq, last_seq, frames_seen;
    int64_t last_pts;
} tracked;

typedef struct tracker {
    tracked *items;
    size_t count, capacity;
    uint64_t next_id;
} tracker;

void tracker_init(tracker *t);
/* Records that `d` is in `frame`. Returns its entry (frames_seen == 1 when new), or NULL when it
 * was already seen in this frame or memory ran out. */
tracked *tracker_see(tracker *t, const detection *d, const cvhost_frame *frame);
/* A code unseen since before now_pts - lost_after_ns, or NULL. */
tracked *tracker_next_lost(tracker *t, int64_t now_pts, int64_t lost_after_ns);
void tracker_remove(tracker *t, tracked *entry);
void tracker_free(tracker *t);
#endif
