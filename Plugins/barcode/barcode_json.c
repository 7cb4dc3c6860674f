#include "barcode_json.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "barcode_symbologies.h"

static void put(json_buf *b, const char *s, size_t n) {
    if (!b->ok) return;
    if (b->length + n + 1 > b->capacity) {
        size_t grown = b->capacity ? b->capacity : 256;
        while (grown < b->length + n + 1) grown *= 2;
        char *t = realloc(b->text, grown);
        if (!t) {
            b->ok = false;
            return;
        }
        b->text = t;
        b->capacity = grown;
    }
    memcpy(b->text + b->length, s, n);
    b->length += n;
    b->text[b->length] = '\0';
}

/* Appends a string literal; its length is counted by the compiler. */
#define PUT_LITERAL(b, literal) put((b), (literal), sizeof(literal) - 1)

static void putf(json_buf *b, const char *format, ...) {
    char tmp[128];
    va_list args;
    va_start(args, format);
    int n = vsnprintf(tmp, sizeof tmp, format, args);
    va_end(args);
    if (n > 0) put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* True when the bytes are valid UTF-8 (no overlongs, no surrogates, nothing past U+10FFFF, no NUL). */
static bool valid_utf8(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (c == 0) return false;
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len;
        unsigned min;
        unsigned cp;
        if (c >= 0xC2 && c <= 0xDF) len = 2, min = 0x80, cp = c & 0x1F;
        else if (c >= 0xE0 && c <= 0xEF) len = 3, min = 0x800, cp = c & 0x0F;
        else if (c >= 0xF0 && c <= 0xF4) len = 4, min = 0x10000, cp = c & 0x07;
        else return false;
        if (i + len > n) return false;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        i += len;
    }
    return true;
}

static void put_string(json_buf *b, const char *s, size_t n) {
    PUT_LITERAL(b, "\"");
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"') PUT_LITERAL(b, "\\\"");
        else if (c == '\\') PUT_LITERAL(b, "\\\\");
        else if (c < 0x20) putf(b, "\\u%04x", c);
        else put(b, (const char *)&s[i], 1);
    }
    PUT_LITERAL(b, "\"");
}

static void put_base64(json_buf *b, const unsigned char *s, size_t n) {
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    PUT_LITERAL(b, "\"");
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)s[i] << 16 | (i + 1 < n ? (unsigned)s[i + 1] << 8 : 0) | (i + 2 < n ? s[i + 2] : 0);
        char out[4] = {alphabet[v >> 18 & 63], alphabet[v >> 12 & 63], i + 1 < n ? alphabet[v >> 6 & 63] : '=',
                       i + 2 < n ? alphabet[v & 63] : '='};
        put(b, out, 4);
    }
    PUT_LITERAL(b, "\"");
}

/* symbology, text (the engine's text, else the bytes when they are UTF-8 text; null for binary
 * payloads), raw_base64 (always), binary. */
static void put_payload(json_buf *b, symbology_id symbology, const char *data, unsigned length, const char *text, bool binary) {
    bool utf8 = !binary && (text || valid_utf8((const unsigned char *)data, length));
    PUT_LITERAL(b, "\"symbology\":");
    const char *name = symbology_name(symbology);
    put_string(b, name, strlen(name));
    PUT_LITERAL(b, ",\"text\":");
    if (utf8 && text) put_string(b, text, strlen(text));
    else if (utf8) put_string(b, data, length);
    else PUT_LITERAL(b, "null");
    PUT_LITERAL(b, ",\"raw_base64\":");
    put_base64(b, (const unsigned char *)data, length);
    putf(b, ",\"binary\":%s", utf8 ? "false" : "true");
}

static const char *orientation_name(code_orientation o) {
    switch (o) {
    case ORIENT_UP: return "up";
    case ORIENT_RIGHT: return "right";
    case ORIENT_DOWN: return "down";
    case ORIENT_LEFT: return "left";
    default: return "unknown";
    }
}

/* What zxing tells beyond the payload, each field only when known. */
static void put_details(json_buf *b, const code_details *x) {
    if (!x->known) return;
    if (x->ec_level[0]) {
        PUT_LITERAL(b, ",\"ec_level\":");
        put_string(b, x->ec_level, strlen(x->ec_level));
    }
    if (x->content_type[0]) putf(b, ",\"content_type\":\"%s\"", x->content_type);
    if (x->aim_id[0]) {
        PUT_LITERAL(b, ",\"aim_id\":");
        put_string(b, x->aim_id, strlen(x->aim_id));
    }
    putf(b, ",\"eci\":%s,\"gs1\":%s", x->has_eci ? "true" : "false", strcmp(x->content_type, "gs1") == 0 ? "true" : "false");
    if (x->sequence_index >= 0) {
        putf(b, ",\"structured_append\":{\"index\":%d,\"count\":%d,\"id\":", x->sequence_index, x->sequence_count);
        put_string(b, x->sequence_id, strlen(x->sequence_id));
        PUT_LITERAL(b, "}");
    }
}

static void put_geometry(json_buf *b, const detection *d, double sx, double sy) {
    PUT_LITERAL(b, "\"corners\":[");
    for (int i = 0; i < 4; i++) putf(b, "%s[%.6g,%.6g]", i ? "," : "", d->corners[i][0] * sx, d->corners[i][1] * sy);
    putf(b, "],\"bounds\":{\"x\":%.6g,\"y\":%.6g,\"width\":%.6g,\"height\":%.6g}", d->bounds[0] * sx, d->bounds[1] * sy,
         d->bounds[2] * sx, d->bounds[3] * sy);
}

int json_detection(json_buf *b, const detection *d) {
    b->ok = true;
    b->length = 0;
    PUT_LITERAL(b, "{");
    put_payload(b, d->symbology, d->data, d->length, d->text, d->binary);
    putf(b, ",\"engine\":\"%s\",\"quality\":%d,\"orientation\":\"%s\",\"inverted\":%s,\"mirrored\":%s", engine_name(d->engine),
         d->quality, orientation_name(d->orientation), d->inverted ? "true" : "false", d->mirrored ? "true" : "false");
    put_details(b, &d->details);
    PUT_LITERAL(b, ",");
    if (d->id) putf(b, "\"id\":%llu,", (unsigned long long)d->id);
    put_geometry(b, d, 1, 1);
    PUT_LITERAL(b, ",\"normalized\":{");
    put_geometry(b, d, 1.0 / d->frame_width, 1.0 / d->frame_height);
    PUT_LITERAL(b, "}}");
    return b->ok ? 0 : -ENOMEM;
}

int json_lost(json_buf *b, const tracked *t) {
    b->ok = true;
    b->length = 0;
    PUT_LITERAL(b, "{");
    put_payload(b, t->symbology, t->data, t->length, t->text, t->binary);
    putf(b, ",\"id\":%llu,\"first_seq\":%llu,\"last_seq\":%llu,\"frames_seen\":%llu}", (unsigned long long)t->id,
         (unsigned long long)t->first_seq, (unsigned long long)t->last_seq, (unsigned long long)t->frames_seen);
    return b->ok ? 0 : -ENOMEM;
}

void json_free(json_buf *b) {
    free(b->text);
    memset(b, 0, sizeof *b);
}
