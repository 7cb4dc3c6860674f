#include "face_cnn.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <opencv2/imgproc.hpp>

namespace cvhost_face {

namespace {

// int *facedetect_cnn(unsigned char *result_buffer, unsigned char *bgr, int width, int height, int step):
// a C++ symbol (no extern "C" upstream), hence the mangled name. The buffer then holds an int
// count and 16 shorts per face: confidence (0-100), x, y, width, height, five (x, y) points, one unused.
using DetectFunction = int *(*)(unsigned char *, unsigned char *, int, int, int);
using ThreadsFunction = void (*)(int);
constexpr const char *detect_symbol = "_Z14facedetect_cnnPhS_iii";
constexpr int shorts_per_face = 16;

struct Library {
    std::mutex mutex;
    bool tried = false;
    DetectFunction detect = nullptr;
    // omp_set_num_threads of the OpenMP runtime the library's calls bind to: the process's own
    // libgomp when one is loaded already (symbols are looked up there first: cvhost's libraries
    // bring Debian's), else the one bundled with it. Each call runs on one thread, the instance's:
    // parallel frames come from instances=N as for every plugin, and on 2 cores OpenMP's second
    // thread gave one instance 1.3 times the frames for 1.4 times the CPU (its threads spin).
    std::vector<ThreadsFunction> set_threads;
    std::string error;
    std::string configured;  // cnn_library= of the first load: the one in the process
};
Library library;

std::string plugin_folder() {
    Dl_info info;
    if (dladdr(reinterpret_cast<void *>(&plugin_folder), &info) && info.dli_fname) {
        std::string path = info.dli_fname;
        size_t slash = path.rfind('/');
        if (slash != std::string::npos) return path.substr(0, slash);
    }
    return ".";
}

// Where the library is looked for: the option; an installation's lib/cvhost/facedetect (the
// plugin is in lib/cvhost/plugins); the build tree's .deps folder, named at build time.
std::vector<std::string> candidates(const std::string &configured) {
    if (!configured.empty()) return {configured};
    std::string dir = plugin_folder();
    std::vector<std::string> paths = {dir + "/../facedetect/yuface/libfacedetection.so", dir + "/facedetect/yuface/libfacedetection.so"};
#ifdef CVHOST_FACEDETECT_BUILD_DIR
    paths.push_back(std::string(CVHOST_FACEDETECT_BUILD_DIR) + "/yuface/libfacedetection.so");
#endif
    return paths;
}

void load_library(const std::string &configured) {
    std::string tried;
    for (const std::string &path : candidates(configured)) {
        void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!handle) {
            tried += (tried.empty() ? "" : "; ") + std::string(dlerror());
            continue;
        }
        auto detect = reinterpret_cast<DetectFunction>(dlsym(handle, detect_symbol));
        if (!detect) {
            tried += (tried.empty() ? "" : "; ") + path + " has no facedetect_cnn";
            dlclose(handle);
            continue;
        }
        library.detect = detect;
        for (void *scope : {RTLD_DEFAULT, handle}) {
            auto f = reinterpret_cast<ThreadsFunction>(dlsym(scope, "omp_set_num_threads"));
            if (f && std::find(library.set_threads.begin(), library.set_threads.end(), f) == library.set_threads.end())
                library.set_threads.push_back(f);
        }
        // The first call sets up state the library shares between calls; calls from several
        // threads before it had been made crashed (as reported on libfacedetection's issue
        // tracker). It is made here, once, under the lock, before any instance can detect.
        for (ThreadsFunction f : library.set_threads) f(1);
        std::vector<unsigned char> buffer(0x20000);
        std::vector<unsigned char> black(32 * 32 * 3, 0);
        detect(buffer.data(), black.data(), 32, 32, 32 * 3);
        return;
    }
    library.error = "cannot load libfacedetection's CNN (" + tried +
                    "): run scripts/fetch-facedetect.sh, give cnn_library=PATH, or use detector=haar";
}

} // namespace

bool CNNDetector::load(const CNNConfig &config, std::string &error) {
    config_ = config;
    std::lock_guard<std::mutex> lock(library.mutex);
    if (!library.tried) {
        library.tried = true;
        library.configured = config.library;
        load_library(config.library);
    } else if (config.library != library.configured) {
        // One library per process: a second cnn_library= would be ignored without a word.
        error = "cnn_library=" + config.library + " differs from the library this process loaded first (" +
                (library.configured.empty() ? std::string("the installed one") : library.configured) +
                "): one CNN library per process; run this instance with isolation=process";
        return false;
    }
    if (!library.detect) error = library.error;
    return library.detect != nullptr;
}

// The region as a small BGR picture, `size` (even sides): each plane is scaled first and only the
// small picture is converted, which costs far less than a full-size BGR frame from the host.
void CNNDetector::small_bgr(const cvhost_frame *frame, const cv::Rect &roi, cv::Size size) {
    const cvhost_plane &yp = frame->planes[0];
    cv::Mat y(int(frame->height), int(frame->width), CV_8UC1, const_cast<uint8_t *>(yp.data), yp.stride);
    int interpolation = size.width < roi.width ? cv::INTER_AREA : cv::INTER_LINEAR;
    if (frame->pixel_format != CVHOST_PIXEL_FORMAT_I420 || frame->plane_count < 3) {
        cv::resize(y(roi), y_, size, 0, 0, interpolation);
        cv::cvtColor(y_, bgr_, cv::COLOR_GRAY2BGR);
        return;
    }
    const cvhost_plane &up = frame->planes[1], &vp = frame->planes[2];
    int cw = int(frame->width + 1) / 2, ch = int(frame->height + 1) / 2;
    cv::Mat u(ch, cw, CV_8UC1, const_cast<uint8_t *>(up.data), up.stride);
    cv::Mat v(ch, cw, CV_8UC1, const_cast<uint8_t *>(vp.data), vp.stride);
    cv::Rect croi(roi.x / 2, roi.y / 2, std::max(1, roi.width / 2), std::max(1, roi.height / 2));
    croi &= cv::Rect(0, 0, cw, ch);
    // One I420 picture in one buffer, as cvtColor wants it: Y, then U, then V.
    i420_.create(size.height * 3 / 2, size.width, CV_8UC1);
    cv::Mat ys(size.height, size.width, CV_8UC1, i420_.data);
    cv::Size half(size.width / 2, size.height / 2);
    cv::Mat us(half, CV_8UC1, i420_.data + size.area());
    cv::Mat vs(half, CV_8UC1, i420_.data + size.area() + half.area());
    cv::resize(y(roi), ys, size, 0, 0, interpolation);
    cv::resize(u(croi), us, half, 0, 0, interpolation);
    cv::resize(v(croi), vs, half, 0, 0, interpolation);
    if (frame->color_range != CVHOST_COLOR_RANGE_FULL) {
        cv::cvtColor(i420_, bgr_, cv::COLOR_YUV2BGR_I420);  // BT.601, limited range
        return;
    }
    // Full range (JPEG, MJPEG webcams): OpenCV's I420 conversion assumes limited range and would
    // crush the shadows (a dark photo lost 3 of 27 faces); its 4:4:4 one is full range.
    cv::resize(us, u_, size, 0, 0, cv::INTER_LINEAR);
    cv::resize(vs, v_, size, 0, 0, cv::INTER_LINEAR);
    cv::merge(std::vector<cv::Mat>{ys, u_, v_}, yuv_);
    cv::cvtColor(yuv_, bgr_, cv::COLOR_YUV2BGR);
}

std::vector<Face> CNNDetector::detect(const cvhost_frame *frame, const cv::Rect &roi) {
    std::vector<Face> faces;
    if (roi.width < 2 || roi.height < 2) return faces;
    double scale = roi.width > config_.detect_width ? double(config_.detect_width) / roi.width : 1.0;
    cv::Size size(std::max(2, int(std::lround(roi.width * scale)) & ~1), std::max(2, int(std::lround(roi.height * scale)) & ~1));
    small_bgr(frame, roi, size);
    int *result = run(bgr_);
    int count = result ? *result : 0;
    double sx = double(roi.width) / size.width, sy = double(roi.height) / size.height;
    cv::Rect2d whole(0, 0, frame->width, frame->height);
    for (int i = 0; i < count && i < int((results_.size() - sizeof(int)) / (shorts_per_face * sizeof(short))); i++) {
        const short *p = reinterpret_cast<const short *>(result + 1) + shorts_per_face * i;
        Face f;
        f.confidence = p[0] / 100.0;
        if (f.confidence < config_.min_confidence) continue;
        f.box = cv::Rect2d(roi.x + p[1] * sx, roi.y + p[2] * sy, p[3] * sx, p[4] * sy) & whole;
        if (f.box.width < config_.min_size || f.box.height <= 0) continue;
        f.detector = "cnn";
        f.has_landmarks = true;
        for (int k = 0; k < 5; k++) f.landmarks[k] = cv::Point2d(roi.x + p[5 + 2 * k] * sx, roi.y + p[6 + 2 * k] * sy);
        angles_from_landmarks(f);
        faces.push_back(f);
    }
    FaceDetector::sort_reading_order(faces);  // new faces get their ids in this order
    return faces;
}

int *CNNDetector::run(const cv::Mat &bgr) {
    // Per calling thread: set on each call, as the instance's thread may be new (a restart).
    for (ThreadsFunction f : library.set_threads) f(1);
    return library.detect(results_.data(), bgr.data, bgr.cols, bgr.rows, int(bgr.step));
}

// Roll: the angle of the line from one eye to the other (clockwise positive, y points down).
// Yaw: a head turned by yaw θ moves the nose tip, which stands out of the face by about half the
// distance between the eyes, sideways by that depth times sin θ, while the eyes' distance
// shrinks to cos θ of itself: the nose's offset from the eyes' middle, in eye distances, is
// 0.5·tan θ; so θ = atan(2·offset). The offset is measured along the eyes' line (roll removed).
// Positive yaw: the face turns towards the image's right edge (the nose moves right).
void angles_from_landmarks(Face &f) {
    const cv::Point2d &a = f.landmarks[0], &b = f.landmarks[1], &nose = f.landmarks[2];
    cv::Point2d eyes = b - a;
    double distance = std::hypot(eyes.x, eyes.y);
    if (distance < 1e-6) return;
    f.has_roll = true;
    f.roll = std::atan2(eyes.y, eyes.x) * 180 / M_PI;
    cv::Point2d along = eyes / distance;
    double offset = (nose - (a + b) * 0.5).dot(along) / distance;
    f.has_yaw = true;
    f.yaw = std::atan(2 * offset) * 180 / M_PI;
}

} // namespace cvhost_face
