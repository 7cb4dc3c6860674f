// Face detection with libfacedetection's CNN (the YuNet family; its weights are compiled into
// the library, fetched by scripts/fetch-facedetect.sh and loaded at run time with dlopen, so the
// plugin still loads, with detector=haar, on a machine without it). Faces of about 10 to 300
// pixels in the image it is given, turned or in poor light, with a confidence and five landmarks.
#pragma once

#include <cvhost/plugin.h>

#include <opencv2/core.hpp>
#include <string>
#include <vector>

#include "face_detector.hpp"

namespace cvhost_face {

struct CNNConfig {
    double min_confidence = 0.6;  // 0-1
    int min_size = 10;            // pixels of the full frame
    int detect_width = 960;       // frames wider than this are scaled down to it for detection
    std::string library;          // the library's path; empty: found beside the plugin
};

class CNNDetector {
  public:
    // Loads the library (once per process) and makes its first call; false with a reason.
    bool load(const CNNConfig &config, std::string &error);
    // Faces in a frame (I420: the plugin asks the host for it) within `roi` (frame pixels), in reading order.
    std::vector<Face> detect(const cvhost_frame *frame, const cv::Rect &roi);

  private:
    CNNConfig config_;
    std::vector<unsigned char> results_ = std::vector<unsigned char>(0x20000);
    cv::Mat y_, u_, v_, yuv_, i420_, bgr_;
    int *run(const cv::Mat &bgr);
    void small_bgr(const cvhost_frame *frame, const cv::Rect &roi, cv::Size size);
};

// Roll (degrees, clockwise positive) from the eyes, and yaw (degrees, +90 facing the image's right
// edge) from where the nose tip lies between them: see face_cnn.cpp.
void angles_from_landmarks(Face &face);

} // namespace cvhost_face
