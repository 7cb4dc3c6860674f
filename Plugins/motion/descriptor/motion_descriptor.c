// The motion plugin's descriptor. The callbacks are Swift (MotionPlugin.swift, exported with
// @_cdecl); the descriptor is C because it must be constant data complete in the file, which
// cvhost reads without loading the plugin, and Swift has no way to emit such a constant.
#include <cvhost/plugin.h>

int motion_create(const cvhost_host *host, const cvhost_option_value *options, uint32_t option_count, void **out_instance,
                  char *error, size_t error_size);
int motion_process(void *instance, const cvhost_frame *frame);
void motion_destroy(void *instance);

static const uint32_t formats[] = {CVHOST_PIXEL_FORMAT_GRAY8};

static const cvhost_option_spec options[] = {
    {"threshold", CVHOST_OPTION_INT, "25", "luma difference (0-255) that counts a pixel as changed", 1, 255, NULL},
    {"min_fraction", CVHOST_OPTION_DOUBLE, "0.01", "share of changed pixels that makes motion", 0.0001, 1, NULL},
    {"step", CVHOST_OPTION_INT, "2", "compare every Nth pixel in each direction", 1, 32, NULL},
    {"report", CVHOST_OPTION_ENUM, "changes", "changes: a line when motion starts and when it stops; every: a line for every frame",
     0, 0, "changes|every"},
    {"hold", CVHOST_OPTION_DOUBLE, "0.3",
     "seconds (media time) a change must last before motion starts or stops: a flicker is not motion", 0, 60, NULL},
};

CVHOST_PLUGIN_EXPORT const cvhost_plugin_descriptor cvhost_plugin = {
    CVHOST_PLUGIN_DESCRIPTOR_HEADER,
    .name = "motion",
    .version = "1.2.0",
    .description = "share of pixels that changed since the last frame, and motion start/stop (a plugin in Swift)",
    .pixel_formats = formats,
    .pixel_format_count = 1,
    .flags = 0, // it keeps the previous frame: one instance, frames in order
    .options = options,
    .option_count = sizeof options / sizeof options[0],
    .option_spec_size = sizeof(cvhost_option_spec),
    .create = motion_create,
    .process = motion_process,
    .destroy = motion_destroy,
};
