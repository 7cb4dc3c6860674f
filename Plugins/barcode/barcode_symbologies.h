/* The symbologies the plugin knows: stable lowercase names users type, and which are on by default. */
#ifndef BARCODE_SYMBOLOGIES_H
#define BARCODE_SYMBOLOGIES_H
#include <stdbool.h>
#include <stddef.h>
#include <zbar.h>

/* The stable name of a zbar symbol type ("qrcode", "ean13", ...). */
const char *symbology_name(zbar_symbol_type_t type);

/* "qrcode, ean13, ..." for messages. */
const char *symbologies_known(void);

/* Enables exactly the symbologies of `spec` ("default", "all", or names joined with '+') on the
 * scanner. On an unknown name returns false and copies it into `bad`. */
bool symbologies_configure(zbar_image_scanner_t *scanner, const char *spec, char *bad, size_t bad_size);
#endif
