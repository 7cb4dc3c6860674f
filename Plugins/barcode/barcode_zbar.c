/* The zbar engine: libzbar's image scanner over a grey picture. */
#include <errno.h>
#include <string.h>
#include <zbar.h>

#include "barcode_engine.h"

static const zbar_symbol_type_t zbar_types[SYM_COUNT] = {
    [SYM_QRCODE] = ZBAR_QRCODE,   [SYM_PDF417] = ZBAR_PDF417,   [SYM_EAN13] = ZBAR_EAN13,
    [SYM_EAN8] = ZBAR_EAN8,       [SYM_UPCA] = ZBAR_UPCA,       [SYM_UPCE] = ZBAR_UPCE,
    [SYM_ISBN10] = ZBAR_ISBN10,   [SYM_ISBN13] = ZBAR_ISBN13,   [SYM_EAN2] = ZBAR_EAN2,
    [SYM_EAN5] = ZBAR_EAN5,       [SYM_CODE128] = ZBAR_CODE128, [SYM_CODE39] = ZBAR_CODE39,
    [SYM_CODE93] = ZBAR_CODE93,   [SYM_CODABAR] = ZBAR_CODABAR, [SYM_I25] = ZBAR_I25,
    [SYM_DATABAR] = ZBAR_DATABAR, [SYM_DATABAR_EXP] = ZBAR_DATABAR_EXP, [SYM_SQCODE] = ZBAR_SQCODE,
};

static symbology_id symbology_of(zbar_symbol_type_t type) {
    for (int i = 0; i < SYM_COUNT; i++)
        if (zbar_types[i] && zbar_types[i] == (zbar_symbol_type_t)(type & ZBAR_SYMBOL)) return (symbology_id)i;
    return SYM_COUNT;
}

static code_orientation orientation_of(zbar_orientation_t o) {
    switch (o) {
    case ZBAR_ORIENT_UP: return ORIENT_UP;
    case ZBAR_ORIENT_RIGHT: return ORIENT_RIGHT;
    case ZBAR_ORIENT_DOWN: return ORIENT_DOWN;
    case ZBAR_ORIENT_LEFT: return ORIENT_LEFT;
    default: return ORIENT_UNKNOWN;
    }
}

/* A fresh scanner for every picture: zbar's scanner keeps decoder state from one image to the
 * next (a code's quality then depends on the frame scanned before), and results must not depend
 * on which instance saw which frame. Creating one costs microseconds. */
static zbar_image_scanner_t *new_scanner(symbology_set symbologies, int density) {
    zbar_image_scanner_t *scanner = zbar_image_scanner_create();
    if (!scanner) return NULL;
    zbar_image_scanner_set_config(scanner, ZBAR_NONE, ZBAR_CFG_ENABLE, 0);
    for (int i = 0; i < SYM_COUNT; i++)
        if (zbar_types[i]) zbar_image_scanner_set_config(scanner, zbar_types[i], ZBAR_CFG_ENABLE, (symbologies & SYMBOLOGY_BIT(i)) != 0);
    zbar_image_scanner_set_config(scanner, ZBAR_NONE, ZBAR_CFG_X_DENSITY, density);
    zbar_image_scanner_set_config(scanner, ZBAR_NONE, ZBAR_CFG_Y_DENSITY, density);
    /* Keep binary payloads as bytes; the text field is filled only when they are valid UTF-8. */
    zbar_image_scanner_set_config(scanner, ZBAR_QRCODE, ZBAR_CFG_BINARY, 1);
    return scanner;
}

int zbar_engine_scan(symbology_set symbologies, int density, const scan_image *picture, const scan_region *r,
                     detections *found) {
    if (!symbologies) return 0;
    if (picture->stride != picture->width) return -EINVAL; /* zbar takes rows without padding */
    zbar_image_scanner_t *scanner = new_scanner(symbologies, density);
    zbar_image_t *image = zbar_image_create();
    if (!scanner || !image) {
        if (scanner) zbar_image_scanner_destroy(scanner);
        if (image) zbar_image_destroy(image);
        return -ENOMEM;
    }
    zbar_image_set_format(image, zbar_fourcc('Y', '8', '0', '0'));
    zbar_image_set_size(image, picture->width, picture->height);
    zbar_image_set_data(image, picture->pixels, (unsigned long)picture->width * picture->height, NULL);
    int n = zbar_scan_image(scanner, image);
    size_t before = found->count;
    for (const zbar_symbol_t *s = n > 0 ? zbar_image_first_symbol(image) : NULL; s; s = zbar_symbol_next(s)) {
        detection d = {0};
        d.symbology = symbology_of(zbar_symbol_get_type(s));
        if (d.symbology == SYM_COUNT) continue;
        d.engine = ENGINE_ZBAR;
        d.data = (char *)zbar_symbol_get_data(s);
        d.length = zbar_symbol_get_data_length(s);
        d.quality = zbar_symbol_get_quality(s);
        d.orientation = orientation_of(zbar_symbol_get_orientation(s));
        d.inverted = r->inverted;
        d.mirrored = r->mirrored;
        unsigned count = zbar_symbol_get_loc_size(s);
        if (count == 0) continue;
        double points[count][2];
        for (unsigned i = 0; i < count; i++) {
            double x = zbar_symbol_get_loc_x(s, i), y = zbar_symbol_get_loc_y(s, i);
            if (r->mirrored) x = (double)picture->width - 1 - x;
            /* zbar goes TL, BL, BR, TR of a 2D code (counter-clockwise); report TL, TR, BR, BL. */
            static const int clockwise[4] = {0, 3, 2, 1};
            unsigned slot = count == 4 ? (unsigned)clockwise[i] : i;
            points[slot][0] = x + r->x0;
            points[slot][1] = y + r->y0;
        }
        detection_set_geometry(&d, (const double(*)[2])points, count);
        if (detections_add(found, &d, r->frame_width, r->frame_height) != 0) {
            n = -ENOMEM;
            break;
        }
    }
    zbar_image_destroy(image); /* detections_add copied what it needs */
    zbar_image_scanner_destroy(scanner);
    return n < 0 ? (n == -ENOMEM ? n : -EIO) : (int)(found->count - before);
}
