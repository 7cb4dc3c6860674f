// A C++ plugin whose process() lets an exception escape on frame 2: it cannot cross the C ABI
// (std::terminate, SIGABRT). In cvhost's process that ends the run (exit 19); in a worker, the worker.
#include <cvhost/plugin.h>

#include <stdexcept>

#ifndef PLUGIN_NAME
#define PLUGIN_NAME "throws"
#endif

namespace {
int create(const cvhost_host *, const cvhost_option_value *, uint32_t, void **out, char *, size_t) {
    static int instance;
    *out = &instance;
    return 0;
}
int process(void *, const cvhost_frame *frame) {
    if (frame->sequence == 2) throw std::runtime_error("an exception the plugin forgot to catch");
    return 0;
}
void destroy(void *) {}
const uint32_t formats[] = {CVHOST_PIXEL_FORMAT_GRAY8};
} // namespace

extern "C" CVHOST_PLUGIN_EXPORT const cvhost_plugin_descriptor cvhost_plugin = {
    CVHOST_PLUGIN_DESCRIPTOR_HEADER,
    .name = PLUGIN_NAME,
    .version = "0.0.1",
    .description = "lets a C++ exception escape process()",
    .pixel_formats = formats,
    .pixel_format_count = 1,
    .create = create,
    .process = process,
    .destroy = destroy,
};
