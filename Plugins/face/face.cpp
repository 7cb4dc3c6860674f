// The `face` plugin: faces with OpenCV's Haar cascades, as AVMetadataFaceObject gives them:
// a faceID stable while the face stays in view, bounds, roll angle (from the eyes) and yaw
// angle (frontal 0, profile +-90), and a face.lost result when a face leaves.
//
// Detection keeps no state, so the plugin runs as parallel instances (instances=N): each
// detects on its own frames (process), then the host applies them to the one tracker in the
// shared state in frame order (the ordered stage), so faceIDs are the same as with one instance.
//
// No C++ exception crosses the C ABI: every entry point catches everything.
#include <cvhost/plugin.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <climits>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "face_detector.hpp"
#include "face_tracker.hpp"

namespace {

using namespace cvhost_face;

enum class Report { every, changes };

// What the instances share: the tracker, changed only in the ordered stage.
struct Shared {
    const cvhost_host *host;
    FaceTracker tracker;
};

struct FacePlugin {
    const cvhost_host *host;
    FaceDetector detector;
    Report report = Report::every;
    double roi[4] = {0, 0, 1, 1};
    uint64_t full_every = 1;
    // The frame between its process() and its ordered(): nothing is kept from frame to frame.
    struct {
        std::vector<Face> faces;
        cv::Rect roi;
        bool whole = false;
        int rc = 0;
    } frame;
};

const char *option(const cvhost_option_value *options, uint32_t count, const char *name) {
    const char *value = cvhost_option(options, count, name);
    return value ? value : "";
}

void log(const cvhost_host *host, int level, const std::string &text) { host->log(host->context, level, text.c_str()); }

std::string number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

std::string bounds_json(const cv::Rect2d &b, double sx, double sy) {
    return "{\"x\":" + number(b.x * sx) + ",\"y\":" + number(b.y * sy) + ",\"width\":" + number(b.width * sx) +
           ",\"height\":" + number(b.height * sy) + "}";
}

std::string face_json(const Face &f, const Assigned &a, const cvhost_frame *frame) {
    std::string s = "{\"face_id\":" + std::to_string(a.id) + ",\"new\":" + (a.is_new ? "true" : "false");
    s += ",\"bounds\":" + bounds_json(f.box, 1, 1);
    s += ",\"normalized\":{\"bounds\":" + bounds_json(f.box, 1.0 / frame->width, 1.0 / frame->height) + "}";
    s += std::string(",\"has_roll\":") + (f.has_roll ? "true" : "false") + ",\"roll_angle\":" + (f.has_roll ? number(f.roll) : "null");
    s += std::string(",\"has_yaw\":") + (f.has_yaw ? "true" : "false") + ",\"yaw_angle\":" + (f.has_yaw ? number(f.yaw) : "null");
    s += std::string(",\"detector\":\"") + f.detector + "\"}";
    return s;
}

std::string lost_json(const Track &t) {
    return "{\"face_id\":" + std::to_string(t.id) + ",\"first_seq\":" + std::to_string(t.first_seq) +
           ",\"last_seq\":" + std::to_string(t.last_seq) + ",\"frames_seen\":" + std::to_string(t.frames_seen) + "}";
}

bool parse_roi(const char *text, double roi[4]) {
    return std::sscanf(text, "%lf:%lf:%lf:%lf", &roi[0], &roi[1], &roi[2], &roi[3]) == 4 && roi[0] >= 0 && roi[1] >= 0 &&
           roi[2] > 0 && roi[3] > 0 && roi[0] + roi[2] <= 1 + 1e-9 && roi[1] + roi[3] <= 1 + 1e-9;
}

int face_create(const cvhost_host *host, const cvhost_option_value *options, uint32_t count, void **out, char *error,
                size_t error_size) {
    try {
        auto self = std::make_unique<FacePlugin>();
        self->host = host;
        DetectorConfig config;
        config.scale_factor = std::strtod(option(options, count, "scale_factor"), nullptr);
        config.min_neighbors = std::atoi(option(options, count, "min_neighbors"));
        config.min_size = std::atoi(option(options, count, "min_size"));
        config.detect_width = std::atoi(option(options, count, "detect_width"));
        config.profile_width = std::atoi(option(options, count, "profile_width"));
        config.profile = std::strcmp(option(options, count, "profile"), "true") == 0;
        config.eyes = std::strcmp(option(options, count, "roll"), "true") == 0;
        config.equalize = std::strcmp(option(options, count, "equalize"), "true") == 0;
        std::string dir = option(options, count, "cascades");
        config.frontal_path = dir + "/haarcascade_frontalface_default.xml";
        config.profile_path = dir + "/haarcascade_profileface.xml";
        config.eye_path = dir + "/haarcascade_eye.xml";
        self->report = std::strcmp(option(options, count, "report"), "changes") == 0 ? Report::changes : Report::every;
        self->full_every = uint64_t(std::max(1, std::atoi(option(options, count, "full_every"))));
        if (!parse_roi(option(options, count, "roi"), self->roi)) {
            std::snprintf(error, error_size, "roi=%s is not X:Y:W:H with normalized values", option(options, count, "roi"));
            return -EINVAL;
        }
        std::string why;
        if (!self->detector.load(config, why)) {
            std::snprintf(error, error_size, "%s", why.c_str());
            return -ENOENT;
        }
        // OpenCV's own threads (a parallel_for over each cascade's scales) stay on even with
        // parallel instances: only whole-frame searches run side by side; the searches around
        // tracked faces run one frame after another (each needs the faces of the frame before),
        // and OpenCV's threads are what spread those over the cores. Measured with
        // benchmarks/face_video.py on faces_1280x720.mp4, face:instances=2: 17.6 fps with
        // cv::setNumThreads(1), 24.0 without.
        *out = self.release();
        return 0;
    } catch (const std::exception &e) {
        std::snprintf(error, error_size, "OpenCV failed: %s", e.what());
    } catch (...) {
        std::snprintf(error, error_size, "unknown C++ exception");
    }
    return -EIO;
}

int face_shared_create(const cvhost_host *host, const cvhost_option_value *options, uint32_t count, void **out, char *error,
                       size_t error_size) {
    try {
        int64_t lost_after = int64_t(cvhost_option_double(options, count, "lost_after", 0.5) * 1e9);
        *out = new Shared{host, FaceTracker(lost_after)};
        return 0;
    } catch (...) {
        std::snprintf(error, error_size, "out of memory");
        return -ENOMEM;
    }
}

// Runs `detect`, turning a C++ exception into a logged failure of the frame.
template <typename Detect> void guarded(FacePlugin *self, const cvhost_frame *frame, Detect &&detect) {
    try {
        detect();
    } catch (const std::exception &e) {
        log(self->host, CVHOST_LOG_ERROR, "frame " + std::to_string(frame->sequence) + ": " + e.what());
        self->frame.rc = -EIO;
    } catch (...) {
        log(self->host, CVHOST_LOG_ERROR, "frame " + std::to_string(frame->sequence) + ": unknown C++ exception");
        self->frame.rc = -EIO;
    }
}

cv::Mat luma(const cvhost_frame *frame) {
    const cvhost_plane &y = frame->planes[0];
    // A header over the host's luma plane: no copy.
    return cv::Mat(int(frame->height), int(frame->width), CV_8UC1, const_cast<uint8_t *>(y.data), y.stride);
}

// Every full_every-th frame (by delivery index) is searched whole, here, in parallel on the
// instances: these frames need nothing from earlier ones. The frames between are searched only
// around the faces tracked so far, in the ordered stage, so that they see the faces of the frame
// before. Output is the same with any number of instances.
int face_process(void *instance, const cvhost_frame *frame) {
    auto *self = static_cast<FacePlugin *>(instance);
    cv::Mat gray = luma(frame);
    auto &f = self->frame;
    f.faces.clear();
    f.rc = 0;
    f.roi = cv::Rect(int(self->roi[0] * frame->width), int(self->roi[1] * frame->height), int(self->roi[2] * frame->width),
                     int(self->roi[3] * frame->height)) &
            cv::Rect(0, 0, gray.cols, gray.rows);
    f.whole = (frame->flags & CVHOST_FRAME_FLAG_INDEPENDENT) || frame->delivery_index % self->full_every == 0;
    if (f.whole) guarded(self, frame, [&] {
            if (f.roi.area() > 0) f.faces = self->detector.detect(gray, f.roi);
            self->detector.estimate_rolls(gray, f.faces);
        });
    return f.rc;
}

// In frame order: the tracker gives the frame's faces their ids.
int face_ordered(void *shared_state, void *instance, const cvhost_frame *frame) {
    auto *shared = static_cast<Shared *>(shared_state);
    auto *self = static_cast<FacePlugin *>(instance);
    auto &f = self->frame;
    try {
        FaceTracker &tracker = shared->tracker;
        std::vector<Track> lost;
        // A new picture: the faces of the last one are gone.
        if (frame->flags & CVHOST_FRAME_FLAG_INDEPENDENT) lost = tracker.take_lost(INT64_MAX);
        if (!f.whole) guarded(self, frame, [&] {
                cv::Mat gray = luma(frame);
                std::vector<NearFace> near;
                for (const NearFace &n : tracker.boxes())
                    if ((n.box & cv::Rect2d(f.roi)).area() > 0) near.push_back(n);
                f.faces = self->detector.detect_near(gray, near);
                self->detector.estimate_rolls(gray, f.faces);
            });
        std::vector<Assigned> ids = tracker.update(f.faces, frame->sequence, frame->presentation_time_ns);
        std::vector<Track> gone = tracker.take_lost(frame->presentation_time_ns);
        lost.insert(lost.end(), gone.begin(), gone.end());
        for (size_t i = 0; i < f.faces.size(); i++) {
            if (self->report == Report::changes && !ids[i].is_new) continue;
            self->host->emit(self->host->context, "face", face_json(f.faces[i], ids[i], frame).c_str());
        }
        for (const Track &t : lost) self->host->emit(self->host->context, "face.lost", lost_json(t).c_str());
    } catch (...) {
        log(self->host, CVHOST_LOG_ERROR, "frame " + std::to_string(frame->sequence) + ": tracking failed");
        return -EIO;
    }
    return f.rc;
}

// The end of the input: every face still in view is lost.
int face_shared_flush(void *shared_state) {
    auto *shared = static_cast<Shared *>(shared_state);
    try {
        for (const Track &t : shared->tracker.take_lost(INT64_MAX))
            shared->host->emit(shared->host->context, "face.lost", lost_json(t).c_str());
        return 0;
    } catch (...) {
        return -EIO;
    }
}

void face_shared_destroy(void *shared_state) { delete static_cast<Shared *>(shared_state); }

void face_destroy(void *instance) {
    try {
        delete static_cast<FacePlugin *>(instance);
    } catch (...) {
    }
}

const uint32_t face_formats[] = {CVHOST_PIXEL_FORMAT_GRAY8};

const cvhost_option_spec face_options[] = {
    {"scale_factor", CVHOST_OPTION_DOUBLE, "1.25", "how much the search window grows per step (smaller finds more, slower)", 1.01, 2, nullptr},
    {"min_neighbors", CVHOST_OPTION_INT, "3", "overlapping hits needed to report a face (higher: fewer false alarms)", 0, 50, nullptr},
    {"min_size", CVHOST_OPTION_INT, "30", "smallest face to look for, in pixels of the frame", 8, 4096, nullptr},
    {"detect_width", CVHOST_OPTION_INT, "1920", "detect on frames scaled down to at most this width (faster, misses small faces)", 160, 8192, nullptr},
    {"equalize", CVHOST_OPTION_BOOL, "false", "equalize the histogram before detection (for dim or flat light; lost recall on the corpus)", 0, 0, nullptr},
    {"profile", CVHOST_OPTION_BOOL, "true", "also look for faces in profile (yaw +-90)", 0, 0, nullptr},
    {"profile_width", CVHOST_OPTION_INT, "640", "like detect_width, for the whole-frame profile search (3x the cost of the frontal one)", 160, 8192, nullptr},
    {"roll", CVHOST_OPTION_BOOL, "true", "find the eyes of frontal faces for the roll angle", 0, 0, nullptr},
    {"report", CVHOST_OPTION_ENUM, "every", "every: each face in each frame; changes: a face when it appears; face.lost either way", 0, 0, "every|changes"},
    {"lost_after", CVHOST_OPTION_DOUBLE, "0.5", "seconds (media time) a face may go unseen before face.lost", 0, 3600, nullptr},
    {"roi", CVHOST_OPTION_STRING, "0:0:1:1", "region of interest X:Y:W:H, normalized to the frame", 0, 0, nullptr},
    {"full_every", CVHOST_OPTION_INT, "15",
     "search the whole frame every Nth frame, and between only around tracked faces (faster; new faces wait up to N-1 frames)", 1, 1000,
     nullptr},
    {"cascades", CVHOST_OPTION_STRING, "/usr/share/opencv4/haarcascades", "folder of OpenCV's Haar cascade files", 0, 0, nullptr},
};

const cvhost_capture_hints face_hints = {sizeof(cvhost_capture_hints), CVHOST_FOCUS_RANGE_NONE, 0, 0};

} // namespace

// Constant-initialized (the descriptor must be complete in the file: cvhost reads it from there).
extern "C" CVHOST_PLUGIN_EXPORT const cvhost_plugin_descriptor cvhost_plugin = {
    CVHOST_PLUGIN_DESCRIPTOR_HEADER,
    .name = "face",
    .version = "1.1.0",
    .description = "faces with OpenCV: faceID across frames, bounds, roll and yaw angles",
    .pixel_formats = face_formats,
    .pixel_format_count = 1,
    // Detection is stateless; the tracker is the shared state, kept in frame order by the host.
    .flags = CVHOST_PLUGIN_FLAG_STATELESS,
    .hints = &face_hints,
    .options = face_options,
    .option_count = sizeof face_options / sizeof face_options[0],
    .option_spec_size = sizeof(cvhost_option_spec),
    .create = face_create,
    .process = face_process,
    .flush = nullptr,
    .destroy = face_destroy,
    .shared_create = face_shared_create,
    .ordered = face_ordered,
    .shared_flush = face_shared_flush,
    .shared_destroy = face_shared_destroy,
};
