#include "barcode_symbologies.h"

#include <stdio.h>
#include <string.h>

typedef struct symbology {
    const char *name;
    zbar_symbol_type_t type;
    /* Off by default, from benchmarks/false-reads.sh (2100 code-free frames, every symbology
     * on): i25, databar and ean2 read codes in noise; databar_exp shares databar's decoder
     * (which also prints assertion warnings on noise) and ean5 is ean2's sibling add-on.
     * isbn10/isbn13 re-label EAN-13 codes starting 978/979, which readers expect as ean13.
     * sqcode and pdf417: zbar's decoders for these are incomplete. Users who need one name it. */
    bool off_by_default;
} symbology;

static const symbology table[] = {
    {"qrcode", ZBAR_QRCODE, false},   {"ean13", ZBAR_EAN13, false},     {"ean8", ZBAR_EAN8, false},
    {"upca", ZBAR_UPCA, false},       {"upce", ZBAR_UPCE, false},       {"isbn10", ZBAR_ISBN10, true},
    {"isbn13", ZBAR_ISBN13, true},   {"code128", ZBAR_CODE128, false}, {"code39", ZBAR_CODE39, false},
    {"code93", ZBAR_CODE93, false},   {"i25", ZBAR_I25, true},          {"codabar", ZBAR_CODABAR, false},
    {"databar", ZBAR_DATABAR, true},  {"databar_exp", ZBAR_DATABAR_EXP, true},
    {"ean2", ZBAR_EAN2, true},        {"ean5", ZBAR_EAN5, true},        {"sqcode", ZBAR_SQCODE, true},
    {"pdf417", ZBAR_PDF417, true},
};
static const size_t table_count = sizeof table / sizeof table[0];

const char *symbology_name(zbar_symbol_type_t type) {
    for (size_t i = 0; i < table_count; i++)
        if (table[i].type == (zbar_symbol_type_t)(type & ZBAR_SYMBOL)) return table[i].name;
    return "unknown";
}

const char *symbologies_known(void) {
    static char text[512];
    if (!text[0]) {
        for (size_t i = 0; i < table_count; i++) {
            strcat(text, table[i].name);
            if (i + 1 < table_count) strcat(text, ", ");
        }
    }
    return text;
}

bool symbologies_configure(zbar_image_scanner_t *scanner, const char *spec, char *bad, size_t bad_size) {
    bool enable[sizeof table / sizeof table[0]] = {false};
    char copy[512];
    snprintf(copy, sizeof copy, "%s", spec);
    char *save = NULL;
    for (char *name = strtok_r(copy, "+", &save); name; name = strtok_r(NULL, "+", &save)) {
        bool matched = false;
        for (size_t i = 0; i < table_count; i++) {
            bool hit = strcmp(name, "all") == 0 || (strcmp(name, "default") == 0 && !table[i].off_by_default) ||
                       strcmp(name, table[i].name) == 0;
            if (hit) enable[i] = matched = true;
        }
        if (!matched) {
            snprintf(bad, bad_size, "%s", name);
            return false;
        }
    }
    zbar_image_scanner_set_config(scanner, ZBAR_NONE, ZBAR_CFG_ENABLE, 0);
    for (size_t i = 0; i < table_count; i++)
        zbar_image_scanner_set_config(scanner, table[i].type, ZBAR_CFG_ENABLE, enable[i] ? 1 : 0);
    return true;
}
