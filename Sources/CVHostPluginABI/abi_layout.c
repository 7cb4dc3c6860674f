// Pins the layout of the ABI structs on this platform (LP64): a change that moves a field breaks
// every plugin already built, so it must fail the build here first. A minor version only adds at
// the end: the pins of 2.0 stay, new ones follow.
#include "cvhost/plugin.h"

#define LP64_PIN(cond, what) _Static_assert(sizeof(void *) != 8 || (cond), what)

_Static_assert(CVHOST_PLUGIN_ABI_MAJOR == 2, "ABI major changed: start new layout pins");

// ABI 2.0
LP64_PIN(sizeof(cvhost_plane) == 40, "cvhost_plane layout (fixed: it sits in an array)");
LP64_PIN(offsetof(cvhost_plane, fd) == 20 && offsetof(cvhost_plane, length) == 32, "cvhost_plane fields");
LP64_PIN(offsetof(cvhost_frame, sequence) == 16 && offsetof(cvhost_frame, delivery_index) == 40, "cvhost_frame fields");
LP64_PIN(offsetof(cvhost_frame, plane_count) == 60 && offsetof(cvhost_frame, planes) == 64, "cvhost_frame fields");
LP64_PIN(offsetof(cvhost_frame, source_width) == 224, "cvhost_frame 2.0 size (its 2.2 fields start there)");
LP64_PIN(offsetof(cvhost_host, emit) == 16 && offsetof(cvhost_host, instance_count) == 36, "cvhost_host fields");
LP64_PIN(offsetof(cvhost_plugin_descriptor, name) == 8 && offsetof(cvhost_plugin_descriptor, hints) == 48,
         "cvhost_plugin_descriptor fields");
LP64_PIN(offsetof(cvhost_plugin_descriptor, create) == 72 && offsetof(cvhost_plugin_descriptor, destroy) == 96,
         "cvhost_plugin_descriptor 2.0 callbacks");
LP64_PIN(sizeof(cvhost_option_spec) == 56, "cvhost_option_spec layout");
_Static_assert(sizeof(cvhost_capture_hints) == 16, "cvhost_capture_hints layout");
_Static_assert(CVHOST_PLUGIN_FLAGS_KNOWN == CVHOST_PLUGIN_FLAG_STATELESS, "every flag is in CVHOST_PLUGIN_FLAGS_KNOWN");
_Static_assert(CVHOST_PIXEL_FORMAT_GRAY8 == 0x59455247u, "GREY fourcc");
_Static_assert(CVHOST_PIXEL_FORMAT_I420 == 0x32315559u, "YU12 fourcc");

// ABI 2.1: the ordered stage, at the ends of cvhost_host and the descriptor.
LP64_PIN(offsetof(cvhost_host, shared) == 40, "cvhost_host 2.1");
LP64_PIN(offsetof(cvhost_plugin_descriptor, shared_create) == 104 && sizeof(cvhost_plugin_descriptor) == 136,
         "cvhost_plugin_descriptor 2.1");

// ABI 2.2: frames of the plugin's size (the request at the end of cvhost_host, where the picture
// lies at the end of cvhost_frame); file options.
LP64_PIN(offsetof(cvhost_host, request_frames) == 48 && sizeof(cvhost_host) == 56, "cvhost_host 2.2");
LP64_PIN(offsetof(cvhost_frame, content_height) == 244, "cvhost_frame 2.2");
LP64_PIN(offsetof(cvhost_frame, full) == 248, "cvhost_frame 2.3");
LP64_PIN(offsetof(cvhost_frame, region_count) == 256 && offsetof(cvhost_frame, regions) == 264 && sizeof(cvhost_frame) == 272, "cvhost_frame 2.4");
LP64_PIN(sizeof(cvhost_region) == 16, "cvhost_region 2.4");
_Static_assert(offsetof(cvhost_frame_request, pixel_format) == 20, "cvhost_frame_request 2.2");
_Static_assert(offsetof(cvhost_frame_request, flags) == 24 && sizeof(cvhost_frame_request) == 28, "cvhost_frame_request 2.3");
_Static_assert(CVHOST_OPTION_FILE == 6, "file options");
