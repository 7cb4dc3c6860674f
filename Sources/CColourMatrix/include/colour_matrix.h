#ifndef CVHOST_COLOUR_MATRIX_H
#define CVHOST_COLOUR_MATRIX_H
#include <stdint.h>

/// YUV to RGB in fixed point (values x 2^14): R = (Y - y_offset) * y_gain + r_v * V',
/// G = ... - g_u * U' - g_v * V', B = ... + b_u * U', with U' = U - 128 and V' = V - 128.
typedef struct cvhost_colour_matrix {
    int32_t y_offset;
    int32_t y_gain;
    int32_t r_v;
    int32_t g_u;
    int32_t g_v;
    int32_t b_u;
} cvhost_colour_matrix;

/// The fraction bits of the matrix's values.
#define CVHOST_COLOUR_MATRIX_BITS 14

/// Writes `height` rows of `width` packed 3-byte pixels (R, G, B in memory; B, G, R when `bgr`)
/// from full-resolution Y, U and V planes (chroma already upsampled), rounded to nearest and clamped.
void cvhost_yuv444_to_rgb24(const uint8_t *y, int y_stride, const uint8_t *u, const uint8_t *v, int uv_stride,
                            uint8_t *dst, int dst_stride, int width, int height, const cvhost_colour_matrix *m, int bgr);

#endif
