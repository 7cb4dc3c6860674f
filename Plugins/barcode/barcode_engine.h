/* What the plugin asks an engine to read, and the engines' entry points. */
#ifndef BARCODE_ENGINE_H
#define BARCODE_ENGINE_H
#include <stdbool.h>
#include <stdint.h>

#include "barcode_detection.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A grey picture to read: rows of `width` bytes, `stride` apart. */
typedef struct scan_image {
    const uint8_t *pixels;
    uint32_t width, height, stride;
} scan_image;

/* How a scanned picture maps back to frame coordinates. */
typedef struct scan_region {
    uint32_t x0, y0;          /* the picture's top-left corner in the frame */
    bool inverted, mirrored;  /* the picture is the frame's region inverted / flipped left to right */
    uint32_t frame_width, frame_height;
} scan_region;

/* zbar (barcode_zbar.c). `density` scans every Nth row and column. Returns the number of codes
 * added to `found`, or a negative errno. */
int zbar_engine_scan(symbology_set symbologies, int density, const scan_image *image, const scan_region *region,
                     detections *found);

/* zxing-cpp (barcode_zxing.cpp). `try_harder` spends more time per frame (zxing's tryHarder and
 * tryRotate: more scan lines, linear codes turned 90 degrees). Returns the number of codes added
 * to `found`, or a negative errno; no C++ exception leaves it. */
int zxing_engine_scan(symbology_set symbologies, bool try_harder, const scan_image *image, const scan_region *region,
                      detections *found);

#ifdef __cplusplus
}
#endif
#endif
