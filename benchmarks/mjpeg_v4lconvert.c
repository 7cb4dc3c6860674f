// The libv4lconvert side of benchmarks/mjpeg_decode.py: converts each JPEG of an MJPEG file
// (concatenated JPEGs, as `ffmpeg -f mjpeg` writes) to I420 with v4lconvert_convert, the call
// libv4l2's emulation makes for an MJPEG camera, and prints the CPU time per frame.
//   cc -O2 mjpeg_v4lconvert.c -o mjpeg_v4lconvert -lv4lconvert && ./mjpeg_v4lconvert FILE WIDTH HEIGHT
// libv4lconvert asks the device about itself when it is set up; with no camera here, a device
// stand-in answers VIDIOC_QUERYCAP (a capture device) and refuses the rest.
#include <errno.h>
#include <libv4l-plugin.h>
#include <libv4lconvert.h>
#include <linux/videodev2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int stand_in_ioctl(void *priv, int fd, unsigned long cmd, void *arg) {
    (void)priv, (void)fd;
    if (cmd == VIDIOC_QUERYCAP) {
        struct v4l2_capability *cap = arg;
        memset(cap, 0, sizeof *cap);
        strcpy((char *)cap->driver, "bench");
        cap->capabilities = V4L2_CAP_VIDEO_CAPTURE | V4L2_CAP_STREAMING;
        return 0;
    }
    errno = EINVAL;
    return -1;
}

static double cpu_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s FILE WIDTH HEIGHT\n", argv[0]);
        return 2;
    }
    int w = atoi(argv[2]), h = atoi(argv[3]);
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 2;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *all = malloc(n);
    if (fread(all, 1, n, f) != (size_t)n) return 2;
    struct libv4l_dev_ops ops = {.ioctl = stand_in_ioctl};
    struct v4lconvert_data *d = v4lconvert_create_with_dev_ops(-1, NULL, &ops);
    if (!d) {
        fprintf(stderr, "v4lconvert_create failed\n");
        return 2;
    }
    struct v4l2_format src = {.type = V4L2_BUF_TYPE_VIDEO_CAPTURE}, dst;
    src.fmt.pix.width = w;
    src.fmt.pix.height = h;
    src.fmt.pix.pixelformat = V4L2_PIX_FMT_MJPEG;
    src.fmt.pix.sizeimage = w * h * 2;
    dst = src;
    dst.fmt.pix.pixelformat = V4L2_PIX_FMT_YUV420;
    dst.fmt.pix.bytesperline = w;
    dst.fmt.pix.sizeimage = w * h * 3 / 2;
    unsigned char *out = malloc(dst.fmt.pix.sizeimage);
    int frames = 0, failed = 0;
    double start = cpu_seconds();
    for (long i = 0, begin = 0; i + 1 < n; i++) {
        if (all[i] == 0xFF && all[i + 1] == 0xD9) {  // end of one JPEG (no D9 marker inside entropy data follows FF)
            if (v4lconvert_convert(d, &src, &dst, all + begin, (int)(i + 2 - begin), out, dst.fmt.pix.sizeimage) < 0) failed++;
            else frames++;
            begin = i + 2;
        }
    }
    double cpu = cpu_seconds() - start;
    printf("{\"frames\": %d, \"failed\": %d, \"cpu_seconds\": %.6f}\n", frames, failed, cpu);
    v4lconvert_destroy(d);
    return 0;
}
