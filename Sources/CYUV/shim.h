#ifndef CYUV_SHIM_H
#define CYUV_SHIM_H
#include <libyuv/planar_functions.h>
#include <libyuv/scale.h>
#include <libyuv/convert.h>
#endif
