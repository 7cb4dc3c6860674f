/* The JSON objects the barcode plugin emits (documented in docs/plugins.md and the JSON Schema). */
#ifndef BARCODE_JSON_H
#define BARCODE_JSON_H
#include <stdbool.h>
#include <stddef.h>

#include "barcode_detection.h"
#include "barcode_tracker.h"

typedef struct json_buf {
    char *text;
    size_t length, capacity;
    bool ok; /* false once memory ran out while building */
} json_buf;

/* Each returns 0 with the object in buf->text, or -ENOMEM. */
int json_detection(json_buf *buf, const detection *d);
int json_lost(json_buf *buf, const tracked *t);
void json_free(json_buf *buf);
#endif
