#ifndef CFFMPEG_SHIM_H
#define CFFMPEG_SHIM_H
#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libswscale/swscale.h>
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>
#include <libavutil/error.h>

// Function-like macros do not import into Swift; these constants carry their values.
static const int CFFmpeg_AVERROR_EOF = AVERROR_EOF;
static const int CFFmpeg_AVERROR_EAGAIN = AVERROR(EAGAIN);
static const int CFFmpeg_AVERROR_EXIT = AVERROR_EXIT;
#endif
