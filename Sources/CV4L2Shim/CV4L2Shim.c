#include "CV4L2Shim.h"

#include <errno.h>
#include <poll.h>
#include <sys/ioctl.h>

const unsigned long CV4L2Shim_VIDIOC_QUERYCAP = VIDIOC_QUERYCAP;
const unsigned long CV4L2Shim_VIDIOC_ENUM_FMT = VIDIOC_ENUM_FMT;
const unsigned long CV4L2Shim_VIDIOC_ENUM_FRAMESIZES = VIDIOC_ENUM_FRAMESIZES;
const unsigned long CV4L2Shim_VIDIOC_ENUM_FRAMEINTERVALS = VIDIOC_ENUM_FRAMEINTERVALS;
const unsigned long CV4L2Shim_VIDIOC_G_FMT = VIDIOC_G_FMT;
const unsigned long CV4L2Shim_VIDIOC_S_FMT = VIDIOC_S_FMT;
const unsigned long CV4L2Shim_VIDIOC_G_PARM = VIDIOC_G_PARM;
const unsigned long CV4L2Shim_VIDIOC_S_PARM = VIDIOC_S_PARM;
const unsigned long CV4L2Shim_VIDIOC_REQBUFS = VIDIOC_REQBUFS;
const unsigned long CV4L2Shim_VIDIOC_QUERYBUF = VIDIOC_QUERYBUF;
const unsigned long CV4L2Shim_VIDIOC_QBUF = VIDIOC_QBUF;
const unsigned long CV4L2Shim_VIDIOC_DQBUF = VIDIOC_DQBUF;
const unsigned long CV4L2Shim_VIDIOC_EXPBUF = VIDIOC_EXPBUF;
const unsigned long CV4L2Shim_VIDIOC_STREAMON = VIDIOC_STREAMON;
const unsigned long CV4L2Shim_VIDIOC_STREAMOFF = VIDIOC_STREAMOFF;
const unsigned long CV4L2Shim_VIDIOC_QUERYCTRL = VIDIOC_QUERYCTRL;
const unsigned long CV4L2Shim_VIDIOC_QUERYMENU = VIDIOC_QUERYMENU;
const unsigned long CV4L2Shim_VIDIOC_G_CTRL = VIDIOC_G_CTRL;
const unsigned long CV4L2Shim_VIDIOC_S_CTRL = VIDIOC_S_CTRL;

const uint32_t CV4L2Shim_PIX_FMT_GREY = V4L2_PIX_FMT_GREY;
const uint32_t CV4L2Shim_PIX_FMT_YUV420 = V4L2_PIX_FMT_YUV420;
const uint32_t CV4L2Shim_PIX_FMT_NV12 = V4L2_PIX_FMT_NV12;
const uint32_t CV4L2Shim_PIX_FMT_YUYV = V4L2_PIX_FMT_YUYV;
const uint32_t CV4L2Shim_PIX_FMT_RGB24 = V4L2_PIX_FMT_RGB24;
const uint32_t CV4L2Shim_PIX_FMT_BGR24 = V4L2_PIX_FMT_BGR24;
const uint32_t CV4L2Shim_PIX_FMT_MJPEG = V4L2_PIX_FMT_MJPEG;
const uint32_t CV4L2Shim_PIX_FMT_JPEG = V4L2_PIX_FMT_JPEG;
const uint32_t CV4L2Shim_PIX_FMT_NV12M = V4L2_PIX_FMT_NV12M;
const uint32_t CV4L2Shim_PIX_FMT_YUV420M = V4L2_PIX_FMT_YUV420M;

/* Struct layouts Swift relies on (it imports them, but a mismatch would be silent). */
_Static_assert(sizeof(struct v4l2_buffer) == 88, "v4l2_buffer layout (LP64)");
_Static_assert(sizeof(struct v4l2_format) == 208, "v4l2_format layout");

int CV4L2Shim_ioctl(int fd, unsigned long request, void *arg) {
    int r = ioctl(fd, request, arg);
    return r == -1 ? -errno : r;
}

int CV4L2Shim_wait_readable(int fd, int timeout_ms) {
    struct pollfd p = {.fd = fd, .events = POLLIN | POLLPRI};
    int r = poll(&p, 1, timeout_ms);
    if (r == -1) return -errno;
    if (r > 0 && (p.revents & (POLLERR | POLLHUP | POLLNVAL)) && !(p.revents & POLLIN)) {
        return (p.revents & POLLNVAL) ? -EBADF : -ENODEV;
    }
    return r;
}
