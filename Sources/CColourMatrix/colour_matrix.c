// The matrix step of YUV to RGB, in C so that the compiler vectorizes it: written once, built twice
// (AVX2 and the x86-64 baseline), the one this CPU runs chosen when the program loads (target_clones).
// libyuv's own conversions are faster still but hold their chroma coefficients in 8 signed bits,
// which caps blue's at 2.0: limited-range BT.709 and BT.2020 come out up to 13 levels off.
#include "colour_matrix.h"

static inline uint8_t clamp8(int32_t x) { return x < 0 ? 0 : x > 255 ? 255 : (uint8_t)x; }

// One row; `r` and `b` are constants where it is inlined, so the stores vectorize.
static inline void row(const uint8_t *restrict y, const uint8_t *restrict u, const uint8_t *restrict v,
                       uint8_t *restrict out, int width, const cvhost_colour_matrix m, const int r, const int b) {
    const int32_t half = 1 << (CVHOST_COLOUR_MATRIX_BITS - 1);
    for (int x = 0; x < width; x++) {
        int32_t l = (y[x] - m.y_offset) * m.y_gain + half;
        int32_t cu = u[x] - 128, cv = v[x] - 128;
        out[3 * x + r] = clamp8((l + m.r_v * cv) >> CVHOST_COLOUR_MATRIX_BITS);
        out[3 * x + 1] = clamp8((l - m.g_u * cu - m.g_v * cv) >> CVHOST_COLOUR_MATRIX_BITS);
        out[3 * x + b] = clamp8((l + m.b_u * cu) >> CVHOST_COLOUR_MATRIX_BITS);
    }
}

// (Not under a sanitizer: the clone's resolver runs while the program is relocated, before the
// sanitizer's runtime is up, and its instrumented code crashes there.)
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define CVHOST_NO_CLONES 1
#endif
#endif
#if defined(__x86_64__) && !defined(CVHOST_NO_CLONES)
__attribute__((target_clones("avx2", "default")))
#endif
void cvhost_yuv444_to_rgb24(const uint8_t *y, int y_stride, const uint8_t *u, const uint8_t *v, int uv_stride,
                            uint8_t *dst, int dst_stride, int width, int height, const cvhost_colour_matrix *m, int bgr) {
    const cvhost_colour_matrix k = *m;
    for (int i = 0; i < height; i++) {
        const uint8_t *yr = y + (long)i * y_stride, *ur = u + (long)i * uv_stride, *vr = v + (long)i * uv_stride;
        uint8_t *out = dst + (long)i * dst_stride;
        if (bgr) row(yr, ur, vr, out, width, k, 2, 0);
        else row(yr, ur, vr, out, width, k, 0, 2);
    }
}
