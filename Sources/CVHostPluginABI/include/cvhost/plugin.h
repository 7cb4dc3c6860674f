/*
 * cvhost/plugin.h — the cvhost plugin ABI, version 2.3.
 *
 * 2.0: the first version of ABI 2. 2.1: the ordered stage (shared_create, ordered, shared_flush,
 * shared_destroy at the end of the descriptor; cvhost_host.shared). 2.2: file options
 * (CVHOST_OPTION_FILE); frames at a size the plugin asks for (cvhost_host.request_frames, and the
 * frame's source_width ... content_height). 2.3: the captured frame beside the scaled one
 * (cvhost_frame_request.flags, CVHOST_FRAME_REQUEST_FULL_FRAME; cvhost_frame.full).
 *
 * This is the only header a plugin author needs. A plugin is a shared object
 * (libcvhost-<name>.so) that exports one constant DATA symbol, `cvhost_plugin`, a
 * cvhost_plugin_descriptor:
 *
 *     CVHOST_PLUGIN_EXPORT const cvhost_plugin_descriptor cvhost_plugin = {
 *         CVHOST_PLUGIN_DESCRIPTOR_HEADER,
 *         .name = "brightness", ...
 *     };
 *
 * (In C++ write `extern "C" CVHOST_PLUGIN_EXPORT const cvhost_plugin_descriptor cvhost_plugin = {...};`
 * and initialize it with constants only: the descriptor must be complete in the file.)
 *
 * cvhost reads the descriptor, and the strings and arrays it points to, from the FILE, without
 * loading it: listing plugins (`cvhost plugins`) and the loader's checks run none of the plugin's
 * code (not even its constructors). Only a plugin that passed the checks is loaded, in cvhost's
 * process or in a worker process of its own (isolation=process), and driven through the callbacks.
 *
 * Plain C data only: no C++ types, no host pointers kept beyond the documented lifetimes, pixel
 * planes that carry a file descriptor besides the pointer. The same plugin binary runs in cvhost's
 * process or in a worker process with no change.
 *
 * ---------------------------------------------------------------------------
 * Versioning
 *   ABI MAJOR.MINOR. The major number changes only when an existing field changes meaning or
 *   place: a plugin built for another major version is refused. A minor version only ADDS: fields
 *   at the end of a struct, flags, enum values, callbacks at the end of the descriptor. Every
 *   struct that can grow starts with `struct_size`, set by whoever built it to the sizeof it was
 *   compiled with.
 *   - The host accepts a descriptor (and option specs, hints) of any size from 2.0's on: what an
 *     older plugin does not know is read as zero (no flag, no callback). What a newer plugin adds
 *     is ignored by an older host, except flags: a flag the host does not know is refused (flags
 *     change how the host must drive a plugin).
 *   - A plugin reads a field of a host-built struct (cvhost_frame, cvhost_host) only when
 *     CVHOST_HAS_FIELD says the host's struct_size covers it; hosts older than the field do not
 *     have it.
 *   Nothing else is checked exactly; `cvhost plugins` shows the version each plugin was built for.
 *
 * Lifecycle (per plugin instance)
 *     create ──► process(frame) … process(frame) ──► [flush] ──► destroy
 *   - create: called once per instance, before any frame. May be called from any host thread. A
 *     plugin that runs with parallel instances (CVHOST_PLUGIN_FLAG_STATELESS) gets one create per
 *     instance. Every declared option is passed, checked and normalized, in declaration order.
 *   - process: called from the instance's own delivery thread, one frame at a time, in increasing
 *     frame sequence order (with gaps where frames were dropped). Never called concurrently for
 *     one instance.
 *   - flush (optional): called once on the delivery thread after the last frame, when the source
 *     ends or the session stops. Emit what is pending (for example "lost" events of a tracker).
 *     Not called for an instance whose create() failed.
 *   - destroy: called once, after the last process/flush returned. Free everything. After destroy
 *     returns the host never calls the instance again, and the plugin must not call any host
 *     service with that instance's host pointer.
 *
 * The ordered stage (optional, ABI 2.1): state shared by parallel instances (a tracker that gives
 * objects ids across frames) lives in one `shared` object the host creates before the instances and
 * destroys after them:
 *     shared_create ──► [instances: create … process(frame) ──► ordered(frame) … ] ──► shared_flush ──► shared_destroy
 *   - process() runs in parallel on the instances and may read `host->shared` but not change it.
 *   - ordered(shared, instance, frame) runs after that instance's process() of the frame, on the
 *     same thread, in frame order (delivery_index 0, 1, 2, ...) over all instances, one call at a
 *     time: the plugin may change the shared state in it without a lock. The frame is still
 *     borrowed. Results emitted in it (through the instance's host) belong to the frame. A frame
 *     whose process() crashed or was not made gets no ordered() call; one whose process() failed does.
 *   - shared_flush after every instance's flush; shared_destroy after every instance's destroy.
 *   A plugin keeps STATELESS meaning what it says: its instances keep nothing between frames; what
 *   must last goes in the shared state. In a worker process (isolation=process) all instances of a
 *   --plugin and its shared state live in the one worker.
 *   The shared object stays loaded for the life of the process that loaded it.
 *
 * Ownership
 *   - The descriptor, its strings and arrays are owned by the plugin, constant, and in the file
 *     (static const data initialized with constants).
 *   - A cvhost_frame and the pixel memory it points to are BORROWED for the duration of one
 *     process() call only. Copy what you need to keep.
 *   - Option values passed to create() are borrowed for the duration of create().
 *   - The cvhost_host pointer passed to create() is valid until destroy() returns.
 *   - Strings passed to host services are copied by the host before they return.
 *
 * Return values
 *   0 on success, a negative errno value on failure (for example -EINVAL). A process() failure is
 *   counted in the plugin's metrics and logged; the session goes on with the next frame. create()
 *   returns CVHOST_ERROR_OPTION_VALUE when an option's value has the right type but is not one the
 *   plugin accepts (an unknown name in a list, a malformed region): the host reports it as a bad
 *   option value, not as a failed start.
 *
 * Output
 *   Results go out only through host->emit. A plugin's stdout (descriptor 1, printf) is never
 *   cvhost's JSON stream: in cvhost's process descriptor 1 points at stderr before any plugin is
 *   loaded, and a worker process's stdout is cvhost's stderr. What a plugin or its libraries print
 *   shows up in cvhost's log.
 *
 * Crashes
 *   In cvhost's process (isolation=none), a bad memory access, abort(), an uncaught C++ exception
 *   or exit() in a plugin ends the whole run: the host names the plugin and the frame (stderr, and a
 *   session.error line with code plugin_crashed or plugin_exited) and exits with code 19. In a
 *   worker process (isolation=process) the same gives a plugin.crashed line; the plugin is restarted
 *   and the run goes on (see docs/writing-plugins.md). Never call exit(); signal handlers installed by a plugin
 *   are not supported.
 * ---------------------------------------------------------------------------
 */
#ifndef CVHOST_PLUGIN_H
#define CVHOST_PLUGIN_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The ABI version this header describes (see Versioning). */
#define CVHOST_PLUGIN_ABI_MAJOR 2
#define CVHOST_PLUGIN_ABI_MINOR 4

/** The name of the data symbol a plugin exports: its cvhost_plugin_descriptor. */
#define CVHOST_PLUGIN_SYMBOL "cvhost_plugin"

/**
 * create()'s return value for an option value the plugin does not accept (write why into
 * `error`). It is -EDOM ("argument out of domain"); cvhost exits with code 18 for it.
 */
#define CVHOST_ERROR_OPTION_VALUE (-33)

/** Marks the descriptor exported even when built with -fvisibility=hidden. */
#if defined(__GNUC__) || defined(__clang__)
#define CVHOST_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define CVHOST_PLUGIN_EXPORT
#endif

/** True if a struct whose first field is `struct_size` is large enough to hold `field`. */
#define CVHOST_HAS_FIELD(ptr, type, field) \
    ((ptr)->struct_size >= offsetof(type, field) + sizeof(((type *)0)->field))

/** Builds a little-endian four-character code, the same codes V4L2 uses. */
#define CVHOST_FOURCC(a, b, c, d) \
    ((uint32_t)(a) | ((uint32_t)(b) << 8) | ((uint32_t)(c) << 16) | ((uint32_t)(d) << 24))

/**
 * Pixel formats, as V4L2 four-character codes.
 * Planes and their order:
 *   GRAY8  1 plane: Y (8-bit luma).
 *   I420   3 planes: Y, U (Cb), V (Cr); chroma halved in both directions.
 *   NV12   2 planes: Y, interleaved UV; chroma halved in both directions.
 *   YUYV   1 plane: Y0 U Y1 V, 2 bytes per pixel.
 *   RGB24  1 plane: R G B, 3 bytes per pixel.
 *   BGR24  1 plane: B G R, 3 bytes per pixel (OpenCV's order).
 * Every format whose first plane is 8-bit luma (GRAY8, I420, NV12) can be read
 * as GRAY8 without conversion; the host does exactly that.
 */
typedef enum cvhost_pixel_format {
    CVHOST_PIXEL_FORMAT_GRAY8 = CVHOST_FOURCC('G', 'R', 'E', 'Y'),
    CVHOST_PIXEL_FORMAT_I420 = CVHOST_FOURCC('Y', 'U', '1', '2'),
    CVHOST_PIXEL_FORMAT_NV12 = CVHOST_FOURCC('N', 'V', '1', '2'),
    CVHOST_PIXEL_FORMAT_YUYV = CVHOST_FOURCC('Y', 'U', 'Y', 'V'),
    CVHOST_PIXEL_FORMAT_RGB24 = CVHOST_FOURCC('R', 'G', 'B', '3'),
    CVHOST_PIXEL_FORMAT_BGR24 = CVHOST_FOURCC('B', 'G', 'R', '3'),
} cvhost_pixel_format;

/**
 * The range of a frame's YUV samples (cvhost_frame.color_range), as its source states it.
 * Converting limited-range YUV as if it were full range gives washed-out colours.
 */
typedef enum cvhost_color_range {
    CVHOST_COLOR_RANGE_UNKNOWN = 0, /**< never set by an ABI 2 host */
    CVHOST_COLOR_RANGE_FULL = 1,    /**< 0-255: JPEG, MJPEG webcams; always for RGB24/BGR24 frames */
    CVHOST_COLOR_RANGE_LIMITED = 2, /**< Y 16-235, U and V 16-240: video (H.264), most YUV cameras */
} cvhost_color_range;

/** The matrix between a frame's YUV samples and RGB (cvhost_frame.color_matrix). */
typedef enum cvhost_color_matrix {
    CVHOST_COLOR_MATRIX_NONE = 0,   /**< RGB24/BGR24 frames */
    CVHOST_COLOR_MATRIX_BT601 = 1,  /**< ITU-R BT.601: standard definition, JPEG */
    CVHOST_COLOR_MATRIX_BT709 = 2,  /**< ITU-R BT.709: high definition */
    CVHOST_COLOR_MATRIX_BT2020 = 3, /**< ITU-R BT.2020, non-constant luminance */
} cvhost_color_matrix;

/** Autofocus range restriction a plugin asks the camera for (AVCaptureAutoFocusRangeRestriction). */
typedef enum cvhost_focus_range {
    CVHOST_FOCUS_RANGE_NONE = 0, /**< no preference */
    CVHOST_FOCUS_RANGE_NEAR = 1, /**< close subjects: barcodes, documents */
    CVHOST_FOCUS_RANGE_FAR = 2,  /**< distant subjects */
} cvhost_focus_range;

/** Type of a plugin option; the host checks values against it before create(). */
typedef enum cvhost_option_type {
    CVHOST_OPTION_BOOL = 1,   /**< "true" / "false" (the host also accepts 1/0, yes/no, on/off and passes "true"/"false") */
    CVHOST_OPTION_INT = 2,    /**< decimal integer within [min, max] */
    CVHOST_OPTION_DOUBLE = 3, /**< decimal number within [min, max] */
    CVHOST_OPTION_STRING = 4, /**< any text (on the command line a comma in it is written `\,`: commas separate options) */
    CVHOST_OPTION_ENUM = 5,   /**< one of `choices`, a '|'-separated list ("near|far|none") */
    /**
     * ABI 2.2: a file the plugin reads (a model, a labels file). The host makes a relative path
     * absolute against the folder cvhost runs in (a worker process runs elsewhere) and refuses a
     * value that is not a file the user can read (exit 18) before create(). Empty: none given.
     */
    CVHOST_OPTION_FILE = 6,
} cvhost_option_type;

/**
 * One option a plugin accepts, declared in a static array. The host steps through the array by
 * the descriptor's option_spec_size, so this struct can grow at its end.
 * Names are [a-z0-9_]+ and not one of the host's own, which every plugin takes: instances,
 * queue_depth, backpressure, max_fps, mirror, rotate, isolation, timeout_ms, max_rss_mb, share,
 * batch, batch_wait_ms, on_motion, motion_refresh
 * (`cvhost plugins` lists them).
 */
typedef struct cvhost_option_spec {
    const char *name;          /**< [a-z0-9_]+, not a host option's name */
    uint32_t type;             /**< a cvhost_option_type */
    const char *default_value; /**< as text, valid for `type`; passed to create() when the user gives none */
    const char *help;          /**< one line, shown by `cvhost plugins` */
    double min;                /**< INT/DOUBLE: smallest value allowed (inclusive) */
    double max;                /**< INT/DOUBLE: largest value allowed (inclusive); min == max == 0 means no bounds */
    const char *choices;       /**< ENUM: '|'-separated; for other types NULL */
} cvhost_option_spec;

/** What a plugin would like from the camera. Applied when the device supports it; reported either way. */
typedef struct cvhost_capture_hints {
    uint32_t struct_size;  /**< sizeof(cvhost_capture_hints) */
    uint32_t focus_range;  /**< a cvhost_focus_range */
    uint32_t min_width;    /**< smallest useful frame width, 0 = any */
    uint32_t min_height;   /**< smallest useful frame height, 0 = any */
} cvhost_capture_hints;

/** Descriptor flags. A host refuses a plugin with a flag it does not know. */
enum {
    /**
     * The plugin's instances keep no state between frames: the host may run it as several
     * instances on several threads (instances=N), each taking the next frame, and re-orders results
     * by frame sequence so that output is the same as with one instance. A plugin that keeps state
     * only with some option (the barcode plugin's report=changes) declares the flag and refuses
     * instances > 1 with that option in create(), with a message naming it.
     */
    CVHOST_PLUGIN_FLAG_STATELESS = 1u << 0,
};

/** Every flag this header knows (a plain number, so that Swift imports it; abi_layout.c checks it). */
#define CVHOST_PLUGIN_FLAGS_KNOWN 0x1u

/**
 * One plane of a frame. The pointer is always set; the plane is also in a file descriptor when
 * `fd` >= 0 (in a worker process, isolation=process: the shared memory the host made the frame in
 * or copied it to, or the camera's own buffer exported as a dmabuf): mmap(fd) at `offset` gives the
 * same bytes. It is read-only: mapping it for writing fails. Fixed in size: it sits in an array.
 */
typedef struct cvhost_plane {
    const uint8_t *data; /**< first byte of the first row */
    uint32_t stride;     /**< bytes from one row to the next (>= row bytes) */
    uint32_t width;      /**< pixels per row the plane covers: the frame's width for GRAY8, RGB24, BGR24, YUYV and luma
                              planes; width/2 (rounded up) for I420's U and V and NV12's interleaved UV (pairs) */
    uint32_t height;     /**< rows in this plane */
    int32_t fd;          /**< a file descriptor holding the plane, valid during process(); -1: none */
    uint64_t offset;     /**< where `data` is within `fd` (0 when fd is -1) */
    uint64_t length;     /**< bytes of the plane from `data`: stride * height */
} cvhost_plane;

/** Frame flags. */
enum {
    /**
     * The frame has nothing to do with the one before: a still image of a list of files. A plugin
     * that follows things from frame to frame (a tracker) should start afresh.
     */
    CVHOST_FRAME_FLAG_INDEPENDENT = 1u << 0,
};

/** A rectangle of the captured picture (ABI 2.4): pixels of source_width x source_height. */
typedef struct cvhost_region {
    uint32_t x;
    uint32_t y;
    uint32_t width;
    uint32_t height;
} cvhost_region;

/** A frame, borrowed by the plugin for the duration of process(). */
typedef struct cvhost_frame {
    uint32_t struct_size;           /**< sizeof(cvhost_frame) as the host built it */
    uint32_t pixel_format;          /**< a cvhost_pixel_format, one the plugin asked for */
    uint32_t width;                 /**< pixels */
    uint32_t height;                /**< pixels */
    uint64_t sequence;              /**< frame number from the start of the session, 0-based; gaps mean drops */
    int64_t capture_time_ns;        /**< when the frame was captured, ns since the Unix epoch (CLOCK_REALTIME) */
    int64_t presentation_time_ns;   /**< media time from the start of the source, ns (for files: the stream's time) */
    /**
     * 0, 1, 2, ... over the frames delivered to this --plugin (all its instances together), in
     * frame order and without gaps (dropped frames get none).
     */
    uint64_t delivery_index;
    uint32_t flags;                 /**< CVHOST_FRAME_FLAG_* */
    /**
     * The range and matrix of the frame's YUV samples (GRAY8: of its luma), from what the source
     * says (V4L2's quantization and Y'CbCr encoding, the stream's colour properties); where it
     * says nothing: full range BT.601 for JPEG and MJPEG, else limited range, BT.601 below 720
     * lines and BT.709 from 720 on. RGB24/BGR24 frames the host converted were computed with
     * them: they are FULL and NONE.
     */
    uint32_t color_range;           /**< a cvhost_color_range */
    uint32_t color_matrix;          /**< a cvhost_color_matrix */
    uint32_t plane_count;           /**< 1..4 */
    cvhost_plane planes[4];

    /* ---- ABI 2.2 (read when CVHOST_HAS_FIELD says the host has them) ---- */
    /**
     * The picture this frame was made from, as captured (and turned): its size. A plugin that
     * asked for frames of its own size (cvhost_host.request_frames) gets the picture scaled into
     * the content rectangle below; otherwise the rectangle is the whole frame and the source's size
     * is the frame's. A point (x, y) of this frame is, in the captured picture:
     *     ((x - content_x) * source_width / content_width, (y - content_y) * source_height / content_height)
     */
    uint32_t source_width;
    uint32_t source_height;
    /** Where the picture lies in this frame (letterbox: the part that is not padding). */
    uint32_t content_x;
    uint32_t content_y;
    uint32_t content_width;
    uint32_t content_height;

    /* ---- ABI 2.3 ---- */
    /**
     * The captured picture at its own size (source_width x source_height, turned as this frame
     * is), in this frame's pixel format, when the plugin asked for it (CVHOST_FRAME_REQUEST_FULL_FRAME):
     * a detector reads this frame, a second stage crops the full one. NULL otherwise, and in
     * ordered(). Valid for the call, as this frame is; its own `full` is NULL.
     */
    const struct cvhost_frame *full;

    /* ---- ABI 2.4 ---- */
    /**
     * Where the frame moved, for a plugin gated on motion (the host option on_motion=true) that
     * asked for regions (CVHOST_FRAME_REQUEST_MOTION_REGIONS): the host's motion boxes merged into
     * squares of its request's larger side (larger where motion is larger), within the captured
     * picture and in its pixels, as `full` is, which comes with them: run on each region's crop of
     * `full` and map the boxes back by the region's x and y. 0 and NULL: look at the whole frame
     * (no motion seen, as on a refresh frame; motion over much of the picture; the plugin not gated).
     * Valid for the call, as this frame is; NULL in ordered().
     */
    uint32_t region_count;
    const cvhost_region *regions;
} cvhost_frame;

/** How frames are fitted to the size a plugin asks for (cvhost_frame_request.resize). */
typedef enum cvhost_resize {
    /** The whole picture scaled to the size; its shape is not kept. */
    CVHOST_RESIZE_STRETCH = 1,
    /**
     * The whole picture scaled to fit, its shape kept, centred on a grey `pad` (Ultralytics'
     * letterbox: one gain, the scaled size rounded, the odd pixel of padding after). Formats whose
     * chroma is halved (I420, NV12, YUYV) have the picture's offsets rounded down to even pixels.
     */
    CVHOST_RESIZE_LETTERBOX = 2,
} cvhost_resize;

/**
 * Frames at a size the plugin chooses (ABI 2.2), made by the host before they reach the plugin:
 * scaled and converted in one pass from the captured frame (a 1080p camera frame never reaches a
 * 640x640 model at full size). Asked for with cvhost_host.request_frames during create().
 */
typedef struct cvhost_frame_request {
    uint32_t struct_size;  /**< sizeof(cvhost_frame_request) */
    uint32_t width;        /**< pixels, 16..8192 */
    uint32_t height;       /**< pixels, 16..8192 */
    uint32_t resize;       /**< a cvhost_resize */
    uint32_t pad;          /**< LETTERBOX: the grey level of the padding, 0..255 (YUV: that luma, neutral chroma) */
    uint32_t pixel_format; /**< one of the plugin's pixel_formats, or 0: the one the host would choose */
    /* ---- ABI 2.3 (a 2.2 plugin's request, without it, is read as flags 0) ---- */
    uint32_t flags;        /**< CVHOST_FRAME_REQUEST_* */
} cvhost_frame_request;

/** cvhost_frame_request.flags. */
enum {
    /** Also hand each frame's captured picture at its own size: cvhost_frame.full (ABI 2.3). */
    CVHOST_FRAME_REQUEST_FULL_FRAME = 1u << 0,
    /**
     * When gated on motion, hand each frame's motion regions (cvhost_frame.regions), squared to
     * this request's larger side, and the captured picture (`full`) with them (ABI 2.4).
     */
    CVHOST_FRAME_REQUEST_MOTION_REGIONS = 1u << 1,
};

/** Log levels for cvhost_host.log. */
typedef enum cvhost_log_level {
    CVHOST_LOG_DEBUG = 0,
    CVHOST_LOG_INFO = 1,
    CVHOST_LOG_WARNING = 2,
    CVHOST_LOG_ERROR = 3,
} cvhost_log_level;

/**
 * Services the host offers a plugin instance. Passed to create(); valid until destroy() returns.
 */
typedef struct cvhost_host {
    uint32_t struct_size; /**< sizeof(cvhost_host) as the host built it */
    uint16_t abi_major;   /**< the ABI version of the host */
    uint16_t abi_minor;
    void *context;        /**< opaque; pass it back as the first argument */

    /**
     * Emits one result. `type` names the kind of result ([a-z0-9_.]{1,64}, e.g. "barcode",
     * "lost"); `json_object` is one JSON object (UTF-8) holding the result's fields. The host
     * validates and re-serializes it, wraps it in the envelope (plugin, frame sequence, timestamps),
     * and writes it as one line. The result belongs to the frame being processed (in flush: the
     * last frame processed; in ordered(): that call's frame; in shared_flush: the last frame
     * through the ordered stage).
     * The object may be at most 1 MiB and nest at most 64 levels deep; strings must be valid UTF-8
     * with control characters escaped. In a worker process (isolation=process, and every Python
     * plugin) one call may emit at most 10,000 results and 16 MiB: past that the call breaks the
     * worker protocol (the worker is restarted, plugin.crashed with reason "protocol").
     * Returns 0, or -EINVAL when `type` or `json_object` is not valid (the result is then not
     * written; the error is counted and logged).
     * Accepted only within these calls, on the thread the host called them on: process() and
     * flush() (the instance's delivery thread), ordered() (the same thread, with the instance's
     * host) and shared_flush() (the thread that flushes the last instance, with the host given to
     * shared_create). From create()/destroy()/shared_create()/shared_destroy(), or from any other
     * thread (a plugin's own inference thread), it returns -EPERM and writes nothing (counted and
     * logged): it is safe to call, but a result must be emitted in the call of the frame it
     * belongs to.
     */
    int (*emit)(void *context, const char *type, const char *json_object);

    /** Writes one line to the host's log (stderr), tagged with the plugin's name. Any thread. */
    void (*log)(void *context, int level, const char *message);

    /**
     * Which of the plugin's parallel instances this is (0-based), and how many there are
     * (`--plugin NAME:instances=N`).
     */
    uint32_t instance_index;
    uint32_t instance_count;

    /* ---- ABI 2.1 ---- */
    /**
     * The plugin's shared state (what shared_create made), or NULL when it has none. Valid until
     * destroy() returns. For the host given to shared_create itself: NULL, and instance_index is
     * UINT32_MAX.
     */
    void *shared;

    /* ---- ABI 2.2 ---- */
    /**
     * Asks for frames of a size of the plugin's own, scaled by the host (see cvhost_frame_request).
     * Accepted only within create(), on its thread; every instance of a plugin that asks must ask
     * the same. The frames then carry where the picture lies in them (cvhost_frame.content_*).
     * With CVHOST_FRAME_REQUEST_FULL_FRAME (2.3), frames also carry the captured one (cvhost_frame.full).
     * Returns 0; -EINVAL for a size out of range, an unknown resize, a pixel format the plugin did
     * not declare, or a flag the host does not know; -EPERM outside create(); -EEXIST when another
     * instance asked otherwise.
     */
    int (*request_frames)(void *context, const cvhost_frame_request *request);
} cvhost_host;

/** One option value passed to create(): every declared option, the user's value or the default. */
typedef struct cvhost_option_value {
    const char *name;
    const char *value; /**< checked against the option's type; booleans are "true" or "false" */
} cvhost_option_value;

/** The plugin's descriptor: the exported constant `cvhost_plugin`. */
typedef struct cvhost_plugin_descriptor {
    uint32_t struct_size;    /**< sizeof(cvhost_plugin_descriptor): CVHOST_PLUGIN_DESCRIPTOR_HEADER sets it */
    uint16_t abi_major;      /**< CVHOST_PLUGIN_ABI_MAJOR */
    uint16_t abi_minor;      /**< CVHOST_PLUGIN_ABI_MINOR */

    const char *name;        /**< [a-z][a-z0-9_-]{0,31}: what users type after --plugin; the file is libcvhost-<name>.so */
    const char *version;     /**< the plugin's own version, e.g. "1.0.0" */
    const char *description; /**< one line */

    const uint32_t *pixel_formats; /**< cvhost_pixel_format values, most preferred first */
    uint32_t pixel_format_count;   /**< >= 1 */
    uint32_t flags;                /**< CVHOST_PLUGIN_FLAG_* */

    const cvhost_capture_hints *hints; /**< may be NULL: no wishes */

    const cvhost_option_spec *options; /**< may be NULL when option_count is 0 */
    uint32_t option_count;
    uint32_t option_spec_size;         /**< sizeof(cvhost_option_spec) as the plugin saw it */

    /**
     * Required. Creates an instance. `options` holds every declared option, in declaration
     * order. On failure, return a negative errno and, if you can, write a one-line reason into
     * `error` (at most `error_size` bytes, NUL-terminated).
     */
    int (*create)(const cvhost_host *host, const cvhost_option_value *options, uint32_t option_count,
                  void **out_instance, char *error, size_t error_size);

    /** Required. Processes one frame (borrowed until return). */
    int (*process)(void *instance, const cvhost_frame *frame);

    /** Optional (may be NULL). End of stream: emit pending results. */
    int (*flush)(void *instance);

    /** Required. Frees the instance. */
    void (*destroy)(void *instance);

    /* ---- ABI 2.1: the ordered stage (see the top of this file). All NULL, or shared_create,
     * ordered and shared_destroy set (shared_flush optional). ---- */

    /**
     * Creates the state shared by all instances, before any instance's create(). `host` is for
     * log() and, from shared_flush, emit(); same options and error rules as create().
     */
    int (*shared_create)(const cvhost_host *host, const cvhost_option_value *options, uint32_t option_count,
                         void **out_shared, char *error, size_t error_size);

    /** Applies one frame to the shared state, in frame order, after `instance`'s process() of it. */
    int (*ordered)(void *shared, void *instance, const cvhost_frame *frame);

    /** Optional. After every instance's flush(): emit what the shared state still holds. */
    int (*shared_flush)(void *shared);

    /** Frees the shared state, after every instance's destroy(). */
    void (*shared_destroy)(void *shared);
} cvhost_plugin_descriptor;

/** The first fields of every descriptor: `{ CVHOST_PLUGIN_DESCRIPTOR_HEADER, .name = ..., ... }`. */
#define CVHOST_PLUGIN_DESCRIPTOR_HEADER \
    .struct_size = sizeof(cvhost_plugin_descriptor), .abi_major = CVHOST_PLUGIN_ABI_MAJOR, \
    .abi_minor = CVHOST_PLUGIN_ABI_MINOR

/* ---------------------------------------------------------------------------
 * Helpers for what every plugin writes by hand. Header-only: they add nothing to the ABI.
 * ------------------------------------------------------------------------- */

/** The value create() was given for option `name`, or NULL when the plugin declared no such option. */
static inline const char *cvhost_option(const cvhost_option_value *options, uint32_t count, const char *name) {
    for (uint32_t i = 0; i < count; i++)
        if (options[i].name && strcmp(options[i].name, name) == 0) return options[i].value;
    return NULL;
}

/** A BOOL option's value (the host passes "true" or "false"); `fallback` when absent. */
static inline int cvhost_option_bool(const cvhost_option_value *options, uint32_t count, const char *name, int fallback) {
    const char *v = cvhost_option(options, count, name);
    return v ? strcmp(v, "true") == 0 : fallback;
}

/** An INT option's value (checked by the host against the option's bounds); `fallback` when absent. */
static inline long long cvhost_option_int(const cvhost_option_value *options, uint32_t count, const char *name,
                                          long long fallback) {
    const char *v = cvhost_option(options, count, name);
    return v ? strtoll(v, NULL, 10) : fallback;
}

/** A DOUBLE option's value (checked by the host against the option's bounds); `fallback` when absent. */
static inline double cvhost_option_double(const cvhost_option_value *options, uint32_t count, const char *name,
                                          double fallback) {
    const char *v = cvhost_option(options, count, name);
    return v ? strtod(v, NULL) : fallback;
}

/** The number of entries of a constant array: `.option_count = CVHOST_COUNT(options)`. */
#define CVHOST_COUNT(array) ((uint32_t)(sizeof(array) / sizeof((array)[0])))

/**
 * Writes `text` (UTF-8) into `out` as the inside of a JSON string: `"`, `\` and control characters
 * escaped (\n, \t, \u00XX). Returns the length it needs (without the NUL), as snprintf does:
 * the result is whole when that is less than `size`. Bytes that are not UTF-8 are the caller's to
 * avoid: the host refuses a result holding them.
 *
 *     char escaped[512], json[600];
 *     cvhost_json_escape(escaped, sizeof escaped, text);
 *     snprintf(json, sizeof json, "{\"text\":\"%s\"}", escaped);
 */
static inline size_t cvhost_json_escape(char *out, size_t size, const char *text) {
    static const char hex[] = "0123456789abcdef";
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        char buf[7];
        size_t len = 0;
        switch (*p) {
        case '"': buf[0] = '\\'; buf[1] = '"'; len = 2; break;
        case '\\': buf[0] = '\\'; buf[1] = '\\'; len = 2; break;
        case '\n': buf[0] = '\\'; buf[1] = 'n'; len = 2; break;
        case '\r': buf[0] = '\\'; buf[1] = 'r'; len = 2; break;
        case '\t': buf[0] = '\\'; buf[1] = 't'; len = 2; break;
        default:
            if (*p < 0x20) {
                memcpy(buf, "\\u00", 4);
                buf[4] = hex[*p >> 4];
                buf[5] = hex[*p & 15];
                len = 6;
            } else {
                buf[0] = (char)*p;
                len = 1;
            }
        }
        for (size_t i = 0; i < len; i++, n++)
            if (n + 1 < size) out[n] = buf[i];
    }
    if (size > 0) out[n < size ? n : size - 1] = '\0';
    return n;
}

/** host->log with printf formatting; the message is cut at 1023 bytes. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 3, 4)))
#endif
static inline void cvhost_logf(const cvhost_host *host, int level, const char *format, ...) {
    char line[1024];
    va_list args;
    va_start(args, format);
    vsnprintf(line, sizeof line, format, args);
    va_end(args);
    host->log(host->context, level, line);
}

#ifdef __cplusplus
}
#endif

#endif /* CVHOST_PLUGIN_H */
