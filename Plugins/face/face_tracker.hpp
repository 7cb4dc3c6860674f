// Gives each face a faceID that stays the same while it stays in view (AVMetadataFaceObject.faceID):
// detections are matched to the faces of earlier frames by overlap, and a face unseen for
// lost_after seconds of media time is lost.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
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

// One tracker shared by every instance of one --plugin (cvhost_host.instance_group). Instances
// detect in parallel; each then applies its frame to the tracker in delivery order.
class SharedTracker {
  public:
    static std::shared_ptr<SharedTracker> for_group(uint64_t group, int64_t lost_after_ns);

    // Runs `body` on the tracker once every frame with a smaller delivery index has run.
    template <typename Body> void in_order(uint64_t delivery_index, Body body) {
        std::unique_lock<std::mutex> lock(mutex_);
        turn_.wait(lock, [&] { return next_index_ == delivery_index; });
        try {
            body(tracker_);
        } catch (...) {
            next_index_++;
            turn_.notify_all();
            throw;
        }
        next_index_++;
        turn_.notify_all();
    }

    // True for exactly one caller: the last of `instances` to flush.
    bool last_to_flush(uint32_t instances);
    FaceTracker &tracker() { return tracker_; }

    explicit SharedTracker(int64_t lost_after_ns) : tracker_(lost_after_ns) {}

  private:
    std::mutex mutex_;
    std::condition_variable turn_;
    uint64_t next_index_ = 0;
    uint32_t flushed_ = 0;
    FaceTracker tracker_;
};

} // namespace cvhost_face
