// Pins the layout of the ABI structs on this platform (LP64): a change that moves a
// field breaks every plugin already built, so it must fail the build here first.
#include "cvhost/plugin.h"

_Static_assert(CVHOST_PLUGIN_ABI_VERSION == 1, "ABI number changed: update the layout pins below");
_Static_assert(sizeof(void *) != 8 || sizeof(cvhost_plane) == 24, "cvhost_plane layout");
_Static_assert(sizeof(void *) != 8 || sizeof(cvhost_frame) == 160, "cvhost_frame layout");
_Static_assert(offsetof(cvhost_frame, sequence) == 16, "cvhost_frame.sequence offset");
// Grown at its end within ABI 1: a plugin built before reads up to delivery_index (152 bytes).
_Static_assert(sizeof(void *) != 8 || offsetof(cvhost_frame, color_range) == 152, "cvhost_frame.color_range offset");
_Static_assert(sizeof(cvhost_capture_hints) == 16, "cvhost_capture_hints layout");
_Static_assert(sizeof(void *) != 8 || sizeof(cvhost_option_spec) == 56, "cvhost_option_spec layout");
_Static_assert(sizeof(void *) != 8 || sizeof(cvhost_host) == 48, "cvhost_host layout");
_Static_assert(sizeof(void *) != 8 || sizeof(cvhost_plugin_descriptor) == 112, "cvhost_plugin_descriptor layout");
_Static_assert(CVHOST_PIXEL_FORMAT_GRAY8 == 0x59455247u, "GREY fourcc");
_Static_assert(CVHOST_PIXEL_FORMAT_I420 == 0x32315559u, "YU12 fourcc");
