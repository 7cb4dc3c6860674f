// Face detection with OpenCV's Haar cascades (Debian's opencv-data): frontal faces, profiles in
// both directions (the profile cascade on the image and on its mirror), and eyes for the roll angle.
#pragma once

#include <opencv2/core.hpp>
#include <opencv2/objdetect.hpp>
#include <string>
#include <vector>

namespace cvhost_face {

struct DetectorConfig {
    double scale_factor = 1.1;
    int min_neighbors = 4;
    int min_size = 40;        // pixels of the full frame
    int detect_width = 1920;  // frames wider than this are scaled down to it for detection
    int profile_width = 640;  // the same for the (three times as costly) whole-frame profile search
    bool profile = true;
    bool eyes = true;
    bool equalize = true;
    std::string frontal_path, profile_path, eye_path;
};

// Where a tracked face was, and whether it was last seen in profile.
struct NearFace {
    cv::Rect2d box;
    bool profile;
};

struct Face {
    cv::Rect2d box;          // full-frame pixels
    bool has_yaw = false;
    double yaw = 0;          // 0 frontal; -90 facing the image's left edge, +90 its right edge
    bool has_roll = false;
    double roll = 0;         // degrees, positive when the face leans clockwise in the image
    const char *detector = "frontal";
    // The CNN's: its score (0-1), and five points in full-frame pixels, named by their side in
    // the picture: left eye, right eye, nose tip, left mouth corner, right mouth corner.
    double confidence = -1;  // < 0: the detector gives none (Haar)
    bool has_landmarks = false;
    cv::Point2d landmarks[5];
};

class FaceDetector {
  public:
    // Loads the cascades; returns false with a reason naming the file.
    bool load(const DetectorConfig &config, std::string &error);
    // Faces in an 8-bit grey frame (a header over the host's luma plane: no copy).
    std::vector<Face> detect(const cv::Mat &gray, const cv::Rect &roi);
    // Faces near where faces were (`around`, frame pixels): each box is searched in a region
    // twice its size, for one face from 0.6 to 1.6 times its width. Far cheaper than the whole
    // frame. The profile cascades run only for a face last seen in profile.
    std::vector<Face> detect_near(const cv::Mat &gray, const std::vector<NearFace> &around);
    // The roll angle of each frontal face, from its eyes (when `roll` is on). Separate from
    // detection because tracking does not need it: it can run outside the tracker's turn.
    void estimate_rolls(const cv::Mat &gray, std::vector<Face> &faces);
    // For the CNN's faces: loads only the eye cascade (false with a reason naming the file), and
    // then measures each face's roll from the eyes it finds, where it finds two.
    bool load_eyes(const std::string &eye_path, std::string &error);
    void measure_rolls(const cv::Mat &gray, std::vector<Face> &faces);
    // Top to bottom, then left to right: the order new faces get their ids in, whatever the
    // detector's own order (OpenCV's threads, the CNN's anchors).
    static void sort_reading_order(std::vector<Face> &faces);

  private:
    DetectorConfig config_;
    cv::CascadeClassifier frontal_, profile_, eye_;
    cv::Mat small_, equalized_, mirrored_, upright_;
    void estimate_roll(const cv::Mat &gray, Face &face);
    enum class Cascades { frontal, profile, both };
    void detect_in(const cv::Mat &region, const cv::Point2d &origin, double scale, double scale_factor, int min_neighbors,
                   cv::Size min_size, cv::Size max_size, Cascades which, std::vector<Face> &faces);
};

double iou(const cv::Rect2d &a, const cv::Rect2d &b);

} // namespace cvhost_face
