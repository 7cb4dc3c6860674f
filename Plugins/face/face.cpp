// The `face` plugin: faces as AVMetadataFaceObject gives them: a faceID stable while the face
// stays in view, bounds, roll and yaw angles, and a face.lost result when a face leaves. Two
// detectors: libfacedetection's CNN (the default: small, turned and dark faces, a confidence and
// five landmarks; face_cnn.cpp) and OpenCV's Haar cascades (detector=haar, face_detector.cpp:
// for a machine without the CNN's library).
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

#include "face_cnn.hpp"
#include "face_detector.hpp"
#include "face_tracker.hpp"

namespace {

using namespace cvhost_face;

enum class Report { every, changes };

// What the instances share: the tracker, changed only in the ordered stage.
struct Shared {
    const cvhost_host *host;
    FaceTracker tracker;
    // The frames are still pictures, each on its own (CVHOST_FRAME_FLAG_INDEPENDENT): their faces
    // get ids but are never "lost" (a face.lost per face of every photo said nothing).
    bool stills = false;
};

struct FacePlugin {
    const cvhost_host *host;
    bool cnn = true;
    bool roll = true;
    CNNDetector cnn_detector;
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

// The five points by where they are in the picture (a face seen from the front: its own right
// eye is on the picture's left).
const char *const landmark_names[5] = {"left_eye", "right_eye", "nose", "left_mouth", "right_mouth"};

std::string landmarks_json(const Face &f, double sx, double sy) {
    if (!f.has_landmarks) return "null";
    std::string s = "{";
    for (int k = 0; k < 5; k++) {
        s += std::string(k ? "," : "") + "\"" + landmark_names[k] + "\":{\"x\":" + number(f.landmarks[k].x * sx) +
             ",\"y\":" + number(f.landmarks[k].y * sy) + "}";
    }
    return s + "}";
}

std::string face_json(const Face &f, const Assigned &a, const cvhost_frame *frame) {
    std::string s = "{\"face_id\":" + std::to_string(a.id) + ",\"new\":" + (a.is_new ? "true" : "false");
    s += ",\"bounds\":" + bounds_json(f.box, 1, 1);
    s += ",\"landmarks\":" + landmarks_json(f, 1, 1);
    s += ",\"normalized\":{\"bounds\":" + bounds_json(f.box, 1.0 / frame->width, 1.0 / frame->height) +
         ",\"landmarks\":" + landmarks_json(f, 1.0 / frame->width, 1.0 / frame->height) + "}";
    s += ",\"confidence\":" + (f.confidence >= 0 ? number(f.confidence) : std::string("null"));
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
        self->cnn = std::strcmp(option(options, count, "detector"), "cnn") == 0;
        self->roll = std::strcmp(option(options, count, "roll"), "true") == 0;
        int detect_width = std::atoi(option(options, count, "detect_width"));
        int min_size = std::atoi(option(options, count, "min_size"));
        self->report = std::strcmp(option(options, count, "report"), "changes") == 0 ? Report::changes : Report::every;
        self->full_every = uint64_t(std::max(1, std::atoi(option(options, count, "full_every"))));
        if (!parse_roi(option(options, count, "roi"), self->roi)) {
            std::snprintf(error, error_size, "roi=%s is not X:Y:W:H with normalized values", option(options, count, "roi"));
            return -EINVAL;
        }
        std::string why;
        if (self->cnn) {
            CNNConfig config;
            config.min_confidence = std::strtod(option(options, count, "min_confidence"), nullptr);
            if (detect_width > 0) config.detect_width = detect_width;
            if (min_size > 0) config.min_size = min_size;
            config.library = option(options, count, "cnn_library");
            if (!self->cnn_detector.load(config, why)) {
                std::snprintf(error, error_size, "%s", why.c_str());
                return -ENOENT;
            }
            // Roll from the eyes that OpenCV's eye cascade finds in each face: the CNN's eye
            // landmarks follow a tilt only in part (a head turned by 30 degrees gave 0 to 14).
            std::string eyes = std::string(option(options, count, "cascades")) + "/haarcascade_eye.xml";
            if (self->roll && !self->detector.load_eyes(eyes, why))
                log(host, CVHOST_LOG_WARNING, why + ": roll comes from the CNN's eye landmarks alone");
            // OpenCV's threads (TBB) cost more than they gain on the small pictures the CNN's side
            // works on (the scaling, the eye cascade): measured 1.5 s of 90 frames at 1080p for
            // the roll with them, 1.1 s without. The setting is the process's: a Haar instance in
            // the same cvhost process then runs on one thread too.
            cv::setNumThreads(1);
            *out = self.release();
            return 0;
        }
        DetectorConfig config;
        config.scale_factor = std::strtod(option(options, count, "scale_factor"), nullptr);
        config.min_neighbors = std::atoi(option(options, count, "min_neighbors"));
        config.min_size = min_size > 0 ? min_size : 30;
        config.detect_width = detect_width > 0 ? detect_width : 1920;
        config.profile_width = std::atoi(option(options, count, "profile_width"));
        config.profile = std::strcmp(option(options, count, "profile"), "true") == 0;
        config.eyes = self->roll;
        config.equalize = std::strcmp(option(options, count, "equalize"), "true") == 0;
        std::string dir = option(options, count, "cascades");
        config.frontal_path = dir + "/haarcascade_frontalface_default.xml";
        config.profile_path = dir + "/haarcascade_profileface.xml";
        config.eye_path = dir + "/haarcascade_eye.xml";
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
    // The CNN searches every frame whole: it is fast enough, and frames that need nothing from
    // the ones before run in parallel on the instances.
    f.whole = self->cnn || (frame->flags & CVHOST_FRAME_FLAG_INDEPENDENT) || frame->delivery_index % self->full_every == 0;
    if (f.whole && self->cnn) guarded(self, frame, [&] {
            f.faces = self->cnn_detector.detect(frame, f.roi);
            if (self->roll) self->detector.measure_rolls(gray, f.faces);
        });
    else if (f.whole) guarded(self, frame, [&] {
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
        shared->stills = frame->flags & CVHOST_FRAME_FLAG_INDEPENDENT;
        if (shared->stills) tracker.take_lost(INT64_MAX);  // the last picture's faces: forgotten, not lost
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
            if (!shared->stills) shared->host->emit(shared->host->context, "face.lost", lost_json(t).c_str());
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

// I420: the CNN scales its planes and converts only the small picture to BGR; Haar reads its luma.
const uint32_t face_formats[] = {CVHOST_PIXEL_FORMAT_I420};

const cvhost_option_spec face_options[] = {
    {"detector", CVHOST_OPTION_ENUM, "cnn", "cnn: libfacedetection's CNN (small, turned, dark faces; landmarks); haar: OpenCV's cascades", 0, 0, "cnn|haar"},
    {"min_confidence", CVHOST_OPTION_DOUBLE, "0.6", "cnn: lowest confidence (0-1) reported (lower finds more, and more false faces)", 0, 1, nullptr},
    {"detect_width", CVHOST_OPTION_INT, "0", "detect on frames scaled down to at most this width (0: cnn 960, haar 1920; wider finds smaller faces, slower)", 0, 8192, nullptr},
    {"min_size", CVHOST_OPTION_INT, "0", "smallest face reported, in pixels of the frame (0: cnn 10, haar 30)", 0, 4096, nullptr},
    {"cnn_library", CVHOST_OPTION_STRING, "", "cnn: the path of libfacedetection.so (default: the one installed with cvhost)", 0, 0, nullptr},
    {"scale_factor", CVHOST_OPTION_DOUBLE, "1.25", "haar: how much the search window grows per step (smaller finds more, slower)", 1.01, 2, nullptr},
    {"min_neighbors", CVHOST_OPTION_INT, "3", "haar: overlapping hits needed to report a face (higher: fewer false alarms)", 0, 50, nullptr},
    {"equalize", CVHOST_OPTION_BOOL, "false", "haar: equalize the histogram before detection (for dim or flat light; lost recall on the corpus)", 0, 0, nullptr},
    {"profile", CVHOST_OPTION_BOOL, "true", "haar: also look for faces in profile (yaw +-90)", 0, 0, nullptr},
    {"profile_width", CVHOST_OPTION_INT, "640", "haar: like detect_width, for the whole-frame profile search (3x the cost of the frontal one)", 160, 8192, nullptr},
    {"roll", CVHOST_OPTION_BOOL, "true", "find the eyes in each face (haar: each frontal face) for the roll angle (cnn without it: its landmarks' roll, which follows a tilt only in part)", 0, 0, nullptr},
    {"report", CVHOST_OPTION_ENUM, "every", "every: each face in each frame; changes: a face when it appears; face.lost either way", 0, 0, "every|changes"},
    {"lost_after", CVHOST_OPTION_DOUBLE, "0.5", "seconds (media time) a face may go unseen before face.lost", 0, 3600, nullptr},
    {"roi", CVHOST_OPTION_STRING, "0:0:1:1", "region of interest X:Y:W:H, normalized to the frame", 0, 0, nullptr},
    {"full_every", CVHOST_OPTION_INT, "15",
     "haar: search the whole frame every Nth frame, and between only around tracked faces (the cnn searches every frame whole)", 1, 1000,
     nullptr},
    {"cascades", CVHOST_OPTION_STRING, "/usr/share/opencv4/haarcascades", "folder of OpenCV's Haar cascade files (cnn: the eyes' only)", 0, 0, nullptr},
};

const cvhost_capture_hints face_hints = {sizeof(cvhost_capture_hints), CVHOST_FOCUS_RANGE_NONE, 0, 0};

} // namespace

// Constant-initialized (the descriptor must be complete in the file: cvhost reads it from there).
extern "C" CVHOST_PLUGIN_EXPORT const cvhost_plugin_descriptor cvhost_plugin = {
    CVHOST_PLUGIN_DESCRIPTOR_HEADER,
    .name = "face",
    .version = "2.0.0",
    .description = "faces with a CNN (libfacedetection) or OpenCV's Haar cascades: faceID across frames, bounds, landmarks, confidence, roll and yaw",
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
