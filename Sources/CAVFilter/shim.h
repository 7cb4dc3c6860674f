#ifndef CAVFILTER_SHIM_H
#define CAVFILTER_SHIM_H
#include <libavfilter/avfilter.h>
#include <libavfilter/buffersrc.h>
#include <libavfilter/buffersink.h>
#include <libavutil/opt.h>
#endif
