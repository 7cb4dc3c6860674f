// Gives each face a faceID that stays the same while it stays in view (AVMetadataFaceObject.faceID):
// detections are matched to the faces of earlier frames by overlap, and a face unseen for
// lost_after seconds of media time is lost.
#pragma once

#include <cstdint>
#include <vector>

#include "face_detector.hpp"

namespace cvhost_face {

struct Track {
    uint64_t id;
    cv::Rect2d box;
    uint64_t first_seq, last_seq, frames_seen;
    int64_t last_pts;
    bool profile;  // last seen by the profile cascade
};

struct Assigned {
    uint64_t id;
    bool is_new;
};

class FaceTracker {
  public:
    explicit FaceTracker(int64_t lost_after_ns) : lost_after_ns_(lost_after_ns) {}
    // Matches this frame's faces to known tracks; returns an id for each face, in order.
    std::vector<Assigned> update(const std::vector<Face> &faces, uint64_t seq, int64_t pts);
    // Tracks unseen since before pts - lost_after (all of them when pts is INT64_MAX); removed.
    std::vector<Track> take_lost(int64_t pts);
    // Where the faces of the tracks are now.
    std::vector<NearFace> boxes() const;

  private:
    int64_t lost_after_ns_;
    std::vector<Track> tracks_;
    uint64_t next_id_ = 1;
};

} // namespace cvhost_face
