#include "face_detector.hpp"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <opencv2/imgproc.hpp>

namespace cvhost_face {

// Searching around tracked faces (benchmarks/face_video.py, faces_1920x1080.mp4): a 1.15 scale
// step with 2 more neighbours than the whole-frame search found 539-540 of 540 faces with 2 false
// alarms; the whole-frame step (1.25) lost faces as they zoomed (528), and 1.1 with the same
// neighbours kept re-confirming a tracked false detection (40 false alarms). Faces under 60
// pixels get no extra (faces_1280x720.mp4: 453 found with it, 485 without).
constexpr double near_scale_factor = 1.15;
constexpr int near_extra_neighbors = 2;

double iou(const cv::Rect2d &a, const cv::Rect2d &b) {
    double inter = (a & b).area();
    double uni = a.area() + b.area() - inter;
    return uni > 0 ? inter / uni : 0;
}

bool FaceDetector::load(const DetectorConfig &config, std::string &error) {
    config_ = config;
    if (!frontal_.load(config.frontal_path)) {
        error = "cannot load the frontal face cascade " + config.frontal_path + " (apt-get install opencv-data)";
        return false;
    }
    if (config.profile && !profile_.load(config.profile_path)) {
        error = "cannot load the profile face cascade " + config.profile_path + " (apt-get install opencv-data)";
        return false;
    }
    if (config.eyes && !eye_.load(config.eye_path)) {
        error = "cannot load the eye cascade " + config.eye_path + " (apt-get install opencv-data)";
        return false;
    }
    return true;
}

std::vector<Face> FaceDetector::detect(const cv::Mat &gray, const cv::Rect &roi) {
    const cv::Mat region = gray(roi);
    // Detect on a frame at most detect_width wide: Haar's cost grows with the pixel count.
    auto scale_for = [&](int width) { return region.cols > width ? double(width) / region.cols : 1.0; };
    auto min_side = [&](double scale) { return std::max(1, int(std::lround(config_.min_size * scale))); };
    std::vector<Face> faces;
    double scale = scale_for(config_.detect_width);
    detect_in(region, cv::Point2d(roi.x, roi.y), scale, config_.scale_factor, config_.min_neighbors,
              cv::Size(min_side(scale), min_side(scale)), cv::Size(), Cascades::frontal, faces);
    if (config_.profile) {
        double pscale = std::min(scale, scale_for(config_.profile_width));
        detect_in(region, cv::Point2d(roi.x, roi.y), pscale, config_.scale_factor, config_.min_neighbors,
                  cv::Size(min_side(pscale), min_side(pscale)), cv::Size(), Cascades::profile, faces);
    }
    sort_reading_order(faces);
    return faces;
}

// Reading order (top to bottom, then left to right): OpenCV's threads collect candidates in no
// fixed order, and new faces get their ids in the order they come; this keeps ids the same run
// after run and with any number of instances.
void FaceDetector::sort_reading_order(std::vector<Face> &faces) {
    std::sort(faces.begin(), faces.end(), [](const Face &a, const Face &b) {
        return std::tie(a.box.y, a.box.x, a.box.width) < std::tie(b.box.y, b.box.x, b.box.width);
    });
}

void FaceDetector::estimate_rolls(const cv::Mat &gray, std::vector<Face> &faces) {
    if (!config_.eyes) return;
    for (Face &f : faces)
        if (f.yaw == 0) estimate_roll(gray, f);
}

bool FaceDetector::load_eyes(const std::string &eye_path, std::string &error) {
    config_.eyes = true;
    if (eye_.load(eye_path)) return true;
    error = "cannot load the eye cascade " + eye_path + " (apt-get install opencv-data)";
    return false;
}

// The eye cascade was trained on upright eyes and misses those of a face tilted by 20 degrees or
// more, and the CNN's eye landmarks follow a tilt only in part (30 degrees gave 0 to 14). So each
// face's square, at most 120 pixels (the cascade's eyes are 20 pixels and more; its cost grows with
// the pixels), is turned upright by the landmarks' roll, then by 20 and 40 degrees more either way,
// until the cascade finds two eyes; the roll is the turn plus what is left between the eyes.
// Without two eyes in any turn, the landmarks' roll stands. (Turning only the way the landmarks
// lean cost a third less and doubled the median error on the corpus's turned photos.)
void FaceDetector::measure_rolls(const cv::Mat &gray, std::vector<Face> &faces) {
    if (eye_.empty()) return;
    for (Face &f : faces) {
        double first = f.has_roll ? f.roll : 0;
        double side = std::max(f.box.width, f.box.height);
        double scale = std::min(1.0, 120 / side);
        int out = int(std::lround(side * scale));
        if (out < 24) continue;
        std::vector<double> offsets = {0, 20, -20, 40, -40};
        cv::Point2f centre(float(f.box.x + f.box.width / 2), float(f.box.y + f.box.height / 2));
        for (double offset : offsets) {
            // OpenCV's positive angle turns counter-clockwise: it undoes a clockwise roll.
            cv::Mat turn = cv::getRotationMatrix2D(centre, first + offset, scale);
            turn.at<double>(0, 2) += out / 2.0 - centre.x;
            turn.at<double>(1, 2) += out / 2.0 - centre.y;
            cv::warpAffine(gray, upright_, turn, cv::Size(out, out), cv::INTER_AREA, cv::BORDER_REPLICATE);
            Face upright;
            upright.box = cv::Rect2d(0, 0, out, out);
            estimate_roll(upright_, upright);
            if (!upright.has_roll) continue;
            f.has_roll = true;
            f.roll = first + offset + upright.roll;
            break;
        }
    }
}

std::vector<Face> FaceDetector::detect_near(const cv::Mat &gray, const std::vector<NearFace> &around) {
    std::vector<Face> faces;
    const cv::Rect frame(0, 0, gray.cols, gray.rows);
    for (const NearFace &near : around) {
        const cv::Rect2d &b = near.box;
        cv::Rect region(int(b.x - b.width / 2), int(b.y - b.height / 2), int(b.width * 2), int(b.height * 2));
        region &= frame;
        if (region.width < 24 || region.height < 24) continue;
        // Same scale rule as the whole frame, so a face is seen alike in both.
        double scale = gray.cols > config_.detect_width ? double(config_.detect_width) / gray.cols : 1.0;
        // The window follows the tracked face's size, not min_size (which is for finding new faces):
        // a face just above min_size would otherwise get a single scale step to be found at.
        int lo = std::max(1, int(std::lround(b.width * 0.6 * scale)));
        int hi = std::max(lo + 1, int(std::lround(b.width * 1.6 * scale)));
        std::vector<Face> found;
        // The region is small: a finer scale step costs little and keeps a face found as it grows or
        // shrinks. A finer step also gives each window more neighbours, so as many more are asked
        // for: else a false detection, once tracked, would be confirmed again frame after frame.
        // Small faces (under 60 pixels as searched) have few neighbours to give: ask the extra only of larger ones.
        int extra = b.width * scale >= 60 ? near_extra_neighbors : 0;
        detect_in(gray(region), cv::Point2d(region.x, region.y), scale, near_scale_factor, config_.min_neighbors + extra,
                  cv::Size(lo, lo), cv::Size(hi, hi), near.profile ? Cascades::both : Cascades::frontal, found);
        // The region is searched for the face that was there: keep the box that matches it best.
        // (A face that newly entered the region is found by the next whole-frame search.)
        auto best = std::max_element(found.begin(), found.end(),
                                     [&](const Face &a, const Face &c) { return iou(a.box, b) < iou(c.box, b); });
        if (best == found.end() || iou(best->box, b) == 0) continue;
        bool known = std::any_of(faces.begin(), faces.end(), [&](const Face &g) { return iou(g.box, best->box) > 0.3; });
        if (!known) faces.push_back(*best);
    }
    sort_reading_order(faces);
    return faces;
}

// Frontal faces, then profiles (on the region and its mirror) where no frontal face is, in one
// region scaled by `scale`; boxes are added to `faces` in frame pixels.
void FaceDetector::detect_in(const cv::Mat &region, const cv::Point2d &origin, double scale, double scale_factor,
                             int min_neighbors, cv::Size min_size, cv::Size max_size, Cascades which, std::vector<Face> &faces) {
    if (scale < 1.0)
        cv::resize(region, small_, cv::Size(), scale, scale, cv::INTER_AREA);
    else
        small_ = region;
    if (config_.equalize)
        cv::equalizeHist(small_, equalized_);
    else
        equalized_ = small_;
    auto to_frame = [&](const cv::Rect &r) {
        return cv::Rect2d(r.x / scale + origin.x, r.y / scale + origin.y, r.width / scale, r.height / scale);
    };
    size_t first = faces.size();
    std::vector<cv::Rect> found;
    if (which != Cascades::profile) frontal_.detectMultiScale(equalized_, found, scale_factor, min_neighbors, 0, min_size, max_size);
    for (const cv::Rect &r : found) {
        Face f;
        f.box = to_frame(r);
        f.has_yaw = true;
        f.yaw = 0;
        faces.push_back(f);
    }
    if (!config_.profile || which == Cascades::frontal) return;
    // Around a tracked face (a size window is given), a frontal face found there is the face:
    // the profile cascades, three times the cost, are run only when it has turned away.
    if (!max_size.empty() && faces.size() > first) return;
    // haarcascade_profileface.xml finds left-facing profiles (the nose toward the image's left
    // edge): yaw -90. On the mirrored image it finds right-facing ones: yaw +90.
    // A profile where a frontal face was already found is the same face.
    auto add_profiles = [&](const std::vector<cv::Rect> &rects, bool mirrored) {
        for (cv::Rect r : rects) {
            if (mirrored) r.x = equalized_.cols - r.x - r.width;
            cv::Rect2d box = to_frame(r);
            bool known = std::any_of(faces.begin(), faces.end(), [&](const Face &g) { return iou(g.box, box) > 0.3; });
            if (known) continue;
            Face f;
            f.box = box;
            f.has_yaw = true;
            f.yaw = mirrored ? 90 : -90;
            f.detector = "profile";
            faces.push_back(f);
        }
    };
    std::vector<cv::Rect> side;
    profile_.detectMultiScale(equalized_, side, scale_factor, min_neighbors, 0, min_size, max_size);
    add_profiles(side, false);
    cv::flip(equalized_, mirrored_, 1);
    side.clear();
    profile_.detectMultiScale(mirrored_, side, scale_factor, min_neighbors, 0, min_size, max_size);
    add_profiles(side, true);
}

// The roll angle from the line between the two eyes, found in the upper part of the face at full
// resolution. Without two plausible eyes there is no roll (has_roll stays false).
void FaceDetector::estimate_roll(const cv::Mat &gray, Face &face) {
    cv::Rect upper(int(face.box.x), int(face.box.y), int(face.box.width), int(face.box.height * 0.6));
    upper &= cv::Rect(0, 0, gray.cols, gray.rows);
    if (upper.width < 24 || upper.height < 12) return;
    std::vector<cv::Rect> eyes;
    int side = std::max(6, upper.width / 8);
    eye_.detectMultiScale(gray(upper), eyes, 1.1, 3, 0, cv::Size(side, side), cv::Size(upper.width / 2, upper.width / 2));
    if (eyes.size() < 2) return;
    std::sort(eyes.begin(), eyes.end(), [](const cv::Rect &a, const cv::Rect &b) { return a.area() > b.area(); });
    cv::Point2d a(eyes[0].x + eyes[0].width / 2.0, eyes[0].y + eyes[0].height / 2.0);
    cv::Point2d b(eyes[1].x + eyes[1].width / 2.0, eyes[1].y + eyes[1].height / 2.0);
    if (a.x > b.x) std::swap(a, b);
    // Two detections of one eye, or eyes implausibly close: no roll.
    if (b.x - a.x < upper.width * 0.2) return;
    face.has_roll = true;
    face.roll = std::atan2(b.y - a.y, b.x - a.x) * 180.0 / M_PI;
}

} // namespace cvhost_face
