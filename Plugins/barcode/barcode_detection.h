/* One decoded code, in frame coordinates, and a growable list of them. */
#ifndef BARCODE_DETECTION_H
#define BARCODE_DETECTION_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zbar.h>

typedef struct detection {
    zbar_symbol_type_t type;
    char *data; /* owned copy of the payload, NUL-terminated (the payload itself may hold NULs) */
    unsigned length;
    int quality;
    zbar_orientation_t orientation;
    bool inverted, mirrored;
    double corners[4][2]; /* pixels, clockwise TL, TR, BR, BL: of the code as it reads (QR), or of the box around a linear code */
    double bounds[4];     /* x, y, width, height in pixels */
    uint32_t frame_width, frame_height;
    uint64_t id; /* tracker id (report=new|track), 0 otherwise */
} detection;

typedef struct detections {
    detection *items;
    size_t count, capacity;
} detections;

void detections_init(detections *list);
/* Copies `d` (and its payload) into the list. Returns 0, or -ENOMEM. */
int detections_add(detections *list, const detection *d, uint32_t frame_width, uint32_t frame_height);
void detections_free(detections *list);
#endif
