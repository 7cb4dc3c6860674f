/* One decoded code, in frame coordinates, whichever engine read it, and a growable list of them. */
#ifndef BARCODE_DETECTION_H
#define BARCODE_DETECTION_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "barcode_symbologies.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which way the code reads in the frame (zbar's four orientations; zxing's angle rounded to them). */
typedef enum code_orientation { ORIENT_UNKNOWN = -1, ORIENT_UP, ORIENT_RIGHT, ORIENT_DOWN, ORIENT_LEFT } code_orientation;

/* What zxing-cpp tells of a code beyond its payload; zbar tells none of it. Empty strings and
 * negative numbers mean "not known". */
typedef struct code_details {
    char ec_level[8];        /* error-correction level: "L".."H" (QR), "33%" (Aztec), "2".."8" (PDF417)... */
    char content_type[12];   /* "text", "binary", "mixed", "gs1", "iso15434", "unknown_eci" */
    char aim_id[4];          /* AIM symbology identifier, e.g. "]Q1" */
    char sequence_id[32];    /* structured append: the id shared by the symbols of one message */
    int sequence_index;      /* structured append: 0-based position, -1 when not part of a sequence */
    int sequence_count;      /* structured append: symbols in the message (0: unknown), -1 when none */
    bool has_eci;            /* the payload carries ECI character-set designators */
    bool known;              /* false: no details (zbar) */
} code_details;

typedef struct detection {
    symbology_id symbology;
    engine_id engine;
    char *data;     /* owned copy of the payload bytes, NUL-terminated (the payload itself may hold NULs) */
    unsigned length;
    char *text;     /* owned; the payload as text decoded by its character set (zxing), or NULL: the bytes
                       are the text when they are valid UTF-8 */
    bool binary;    /* the engine says the payload is not text (zxing's content type) */
    int quality;
    code_orientation orientation;
    bool inverted, mirrored;
    double corners[4][2]; /* pixels, clockwise TL, TR, BR, BL: of the code as it reads (2D), or of the box around a linear code */
    double bounds[4];     /* x, y, width, height in pixels */
    uint32_t frame_width, frame_height;
    uint64_t id; /* tracker id (report=new|track), 0 otherwise */
    code_details details;
} detection;

typedef struct detections {
    detection *items;
    size_t count, capacity;
} detections;

void detections_init(detections *list);
/* Copies `d` (its payload and text) into the list, unless the list holds the same code already:
 * same payload bytes, overlapping bounds, and the same symbology or one of the pair read by another
 * engine (zbar can report a code once per scan direction; two engines can both read it). Returns
 * 0, or -ENOMEM. */
int detections_add(detections *list, const detection *d, uint32_t frame_width, uint32_t frame_height);
void detections_free(detections *list);

/* Sets corners and bounds from the points an engine gives: four corners of a 2D code clockwise
 * from its top-left, or (for linear codes, or any other count) the box around the points. */
void detection_set_geometry(detection *d, const double (*points)[2], unsigned count);
#ifdef __cplusplus
}
#endif
#endif
