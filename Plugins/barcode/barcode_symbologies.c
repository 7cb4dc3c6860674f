#include "barcode_symbologies.h"

#include <stdio.h>
#include <string.h>

typedef struct symbology {
    const char *name;
    bool zbar, zxing; /* which engines read it */
    /* Off by default, from benchmarks/false-reads.sh (code-free frames, every symbology on):
     * i25, databar and ean2 read codes in noise; databar_exp shares databar's decoder and ean5
     * is ean2's sibling add-on. isbn10/isbn13 re-label EAN-13 codes starting 978/979, which
     * readers expect as ean13. sqcode: zbar's decoder is incomplete. maxicode: zxing-cpp 1.4
     * reads it only in clean, upright renders. Users who need one name it. */
    bool off_by_default;
} symbology;

static const symbology table[SYM_COUNT] = {
    [SYM_QRCODE] = {"qrcode", true, true, false},
    [SYM_MICROQR] = {"microqr", false, true, false},
    [SYM_DATAMATRIX] = {"datamatrix", false, true, false},
    [SYM_AZTEC] = {"aztec", false, true, false},
    [SYM_PDF417] = {"pdf417", true, true, false},
    [SYM_MAXICODE] = {"maxicode", false, true, true},
    [SYM_EAN13] = {"ean13", true, true, false},
    [SYM_EAN8] = {"ean8", true, true, false},
    [SYM_UPCA] = {"upca", true, true, false},
    [SYM_UPCE] = {"upce", true, true, false},
    [SYM_ISBN10] = {"isbn10", true, false, true},
    [SYM_ISBN13] = {"isbn13", true, false, true},
    [SYM_EAN2] = {"ean2", true, false, true},
    [SYM_EAN5] = {"ean5", true, false, true},
    [SYM_CODE128] = {"code128", true, true, false},
    [SYM_CODE39] = {"code39", true, true, false},
    [SYM_CODE93] = {"code93", true, true, false},
    [SYM_CODABAR] = {"codabar", true, true, false},
    [SYM_I25] = {"i25", true, true, true},
    [SYM_DATABAR] = {"databar", true, true, true},
    [SYM_DATABAR_EXP] = {"databar_exp", true, true, true},
    [SYM_SQCODE] = {"sqcode", true, false, true},
};

const char *symbology_name(symbology_id id) { return (unsigned)id < SYM_COUNT ? table[id].name : "unknown"; }

const char *engine_name(engine_id engine) { return engine == ENGINE_ZXING ? "zxing" : "zbar"; }

const char *symbologies_known(void) {
    static char text[512];
    if (!text[0]) {
        for (size_t i = 0; i < SYM_COUNT; i++) {
            strcat(text, table[i].name);
            if (i + 1 < SYM_COUNT) strcat(text, ", ");
        }
    }
    return text;
}

bool symbologies_parse(const char *spec, symbology_set *out, symbology_set *named, char *bad, size_t bad_size) {
    symbology_set set = 0, by_name = 0;
    char copy[512];
    snprintf(copy, sizeof copy, "%s", spec);
    char *save = NULL;
    for (char *name = strtok_r(copy, "+", &save); name; name = strtok_r(NULL, "+", &save)) {
        bool matched = false;
        for (size_t i = 0; i < SYM_COUNT; i++) {
            bool hit = strcmp(name, "all") == 0 || (strcmp(name, "default") == 0 && !table[i].off_by_default) ||
                       strcmp(name, table[i].name) == 0;
            if (hit) {
                set |= SYMBOLOGY_BIT(i);
                if (strcmp(name, table[i].name) == 0) by_name |= SYMBOLOGY_BIT(i);
                matched = true;
            }
        }
        if (!matched) {
            snprintf(bad, bad_size, "%s", name);
            return false;
        }
    }
    if (!set) {
        snprintf(bad, bad_size, "%s", spec);
        return false;
    }
    *out = set;
    *named = by_name;
    return true;
}

symbology_set symbologies_for_engine(symbology_set wanted, symbology_set named, engine_id engine, bool with_zxing) {
    symbology_set set = 0;
    for (size_t i = 0; i < SYM_COUNT; i++) {
        bool reads = engine == ENGINE_ZXING ? table[i].zxing : table[i].zbar;
        if (engine == ENGINE_ZBAR && with_zxing && i == SYM_PDF417) reads = false;
        if (engine == ENGINE_ZXING && i == SYM_UPCE && !(named & SYMBOLOGY_BIT(i))) reads = false;
        if (reads && (wanted & SYMBOLOGY_BIT(i))) set |= SYMBOLOGY_BIT(i);
    }
    return set;
}

bool symbologies_unreadable(symbology_set set, unsigned engines, char *out, size_t out_size) {
    out[0] = '\0';
    size_t used = 0;
    for (size_t i = 0; i < SYM_COUNT; i++) {
        bool readable = ((engines & (1u << ENGINE_ZBAR)) && table[i].zbar) || ((engines & (1u << ENGINE_ZXING)) && table[i].zxing);
        if ((set & SYMBOLOGY_BIT(i)) && !readable) {
            int n = snprintf(out + used, out_size - used, "%s%s", used ? ", " : "", table[i].name);
            if (n < 0 || (size_t)n >= out_size - used) break;
            used += (size_t)n;
        }
    }
    return out[0] != '\0';
}
