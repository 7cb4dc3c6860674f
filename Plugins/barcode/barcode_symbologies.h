/* The symbologies the plugin knows, whichever engine reads them: the stable lowercase names users
 * type in symbologies= and read in results, which engine can read each, and which are on by
 * default. The engines map these ids to their own types (barcode_zbar.c, barcode_zxing.cpp). */
#ifndef BARCODE_SYMBOLOGIES_H
#define BARCODE_SYMBOLOGIES_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum symbology_id {
    SYM_QRCODE, SYM_MICROQR, SYM_DATAMATRIX, SYM_AZTEC, SYM_PDF417, SYM_MAXICODE,
    SYM_EAN13, SYM_EAN8, SYM_UPCA, SYM_UPCE, SYM_ISBN10, SYM_ISBN13, SYM_EAN2, SYM_EAN5,
    SYM_CODE128, SYM_CODE39, SYM_CODE93, SYM_CODABAR, SYM_I25, SYM_DATABAR, SYM_DATABAR_EXP, SYM_SQCODE,
    SYM_COUNT
} symbology_id;

/** A set of symbologies, one bit per symbology_id. */
typedef uint32_t symbology_set;
#define SYMBOLOGY_BIT(id) ((symbology_set)1u << (id))

/** The engines that read codes. */
typedef enum engine_id { ENGINE_ZBAR = 0, ENGINE_ZXING = 1, ENGINE_COUNT } engine_id;

const char *symbology_name(symbology_id id);
const char *engine_name(engine_id engine);

/** "qrcode, microqr, ..." for messages. */
const char *symbologies_known(void);

/** Parses `spec` ("default", "all", or names joined with '+', mixed freely) into a set, and the
 *  symbologies named one by one into `named`. On an unknown name returns false and copies it
 *  into `bad`. */
bool symbologies_parse(const char *spec, symbology_set *out, symbology_set *named, char *bad, size_t bad_size);

/** The symbologies of `wanted` that `engine` reads. zbar leaves PDF417 to zxing when both engines
 *  run (`with_zxing`): its PDF417 decoder is incomplete. zxing reads UPC-E only when it is `named`
 *  (it reads false UPC-E codes inside EAN-13 bars; zbar does not). */
symbology_set symbologies_for_engine(symbology_set wanted, symbology_set named, engine_id engine, bool with_zxing);

/** The names in `set` that no engine of `engines` (a bit per engine_id) reads, joined with ", ",
 *  into `out`; returns false when there are none. */
bool symbologies_unreadable(symbology_set set, unsigned engines, char *out, size_t out_size);
#ifdef __cplusplus
}
#endif
#endif
