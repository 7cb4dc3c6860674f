/*
 * CV4L2Shim: what Swift cannot import from <linux/videodev2.h> directly. VIDIOC_* and
 * V4L2_PIX_FMT_* are function-like macros (exported here as constants), and ioctl is variadic
 * (wrapped here with fixed arguments). Every symbol is prefixed CV4L2Shim_. Also brings in
 * libv4lconvert, for the formats only it converts.
 */
#ifndef CV4L2SHIM_H
#define CV4L2SHIM_H

#include <libv4lconvert.h>
#include <linux/videodev2.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

extern const unsigned long CV4L2Shim_VIDIOC_QUERYCAP;
extern const unsigned long CV4L2Shim_VIDIOC_ENUM_FMT;
extern const unsigned long CV4L2Shim_VIDIOC_ENUM_FRAMESIZES;
extern const unsigned long CV4L2Shim_VIDIOC_ENUM_FRAMEINTERVALS;
extern const unsigned long CV4L2Shim_VIDIOC_G_FMT;
extern const unsigned long CV4L2Shim_VIDIOC_S_FMT;
extern const unsigned long CV4L2Shim_VIDIOC_G_PARM;
extern const unsigned long CV4L2Shim_VIDIOC_S_PARM;
extern const unsigned long CV4L2Shim_VIDIOC_REQBUFS;
extern const unsigned long CV4L2Shim_VIDIOC_QUERYBUF;
extern const unsigned long CV4L2Shim_VIDIOC_QBUF;
extern const unsigned long CV4L2Shim_VIDIOC_DQBUF;
extern const unsigned long CV4L2Shim_VIDIOC_EXPBUF;
extern const unsigned long CV4L2Shim_VIDIOC_STREAMON;
extern const unsigned long CV4L2Shim_VIDIOC_STREAMOFF;
extern const unsigned long CV4L2Shim_VIDIOC_QUERYCTRL;
extern const unsigned long CV4L2Shim_VIDIOC_QUERYMENU;
extern const unsigned long CV4L2Shim_VIDIOC_G_CTRL;
extern const unsigned long CV4L2Shim_VIDIOC_S_CTRL;

extern const uint32_t CV4L2Shim_PIX_FMT_GREY;
extern const uint32_t CV4L2Shim_PIX_FMT_YUV420;
extern const uint32_t CV4L2Shim_PIX_FMT_NV12;
extern const uint32_t CV4L2Shim_PIX_FMT_YUYV;
extern const uint32_t CV4L2Shim_PIX_FMT_RGB24;
extern const uint32_t CV4L2Shim_PIX_FMT_BGR24;
extern const uint32_t CV4L2Shim_PIX_FMT_MJPEG;
extern const uint32_t CV4L2Shim_PIX_FMT_JPEG;
/* Multi-planar: one memory plane per image plane. */
extern const uint32_t CV4L2Shim_PIX_FMT_NV12M;
extern const uint32_t CV4L2Shim_PIX_FMT_YUV420M;

/* Returns the ioctl's result, or -errno on failure (errno is read here, right after the call:
 * Swift code between the call and a read of errno could change it); -EINTR is the caller's to
 * retry (SystemCall.retryingNegated). */
int CV4L2Shim_ioctl(int fd, unsigned long request, void *arg);
/* Waits up to timeout_ms for a frame; 1 ready, 0 timeout, -errno on error (-EINTR: a signal came). */
int CV4L2Shim_wait_readable(int fd, int timeout_ms);
#endif
