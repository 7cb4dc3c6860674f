#include "face_tracker.hpp"

#include <algorithm>
#include <map>

namespace cvhost_face {

std::vector<Assigned> FaceTracker::update(const std::vector<Face> &faces, uint64_t seq, int64_t pts) {
    // Greedy matching, best overlap first. A face moving fast between frames still overlaps its
    // previous box at the frame rates cameras deliver; when it does not, its centre inside the
    // previous box (grown by half) counts as a match of lesser score.
    struct Pair {
        double score;
        size_t face, track;
    };
    std::vector<Pair> pairs;
    for (size_t f = 0; f < faces.size(); f++)
        for (size_t t = 0; t < tracks_.size(); t++) {
            double score = iou(faces[f].box, tracks_[t].box);
            if (score < 0.2) {
                const cv::Rect2d &b = tracks_[t].box;
                cv::Rect2d grown(b.x - b.width / 4, b.y - b.height / 4, b.width * 1.5, b.height * 1.5);
                cv::Point2d c(faces[f].box.x + faces[f].box.width / 2, faces[f].box.y + faces[f].box.height / 2);
                double ratio = faces[f].box.width / b.width;
                score = grown.contains(c) && ratio > 0.6 && ratio < 1.6 ? 0.1 : 0;
            }
            if (score > 0) pairs.push_back({score, f, t});
        }
    std::sort(pairs.begin(), pairs.end(), [](const Pair &a, const Pair &b) { return a.score > b.score; });
    std::vector<Assigned> out(faces.size(), Assigned{0, true});
    std::vector<bool> track_used(tracks_.size(), false), face_done(faces.size(), false);
    for (const Pair &p : pairs) {
        if (track_used[p.track] || face_done[p.face]) continue;
        track_used[p.track] = face_done[p.face] = true;
        Track &t = tracks_[p.track];
        t.box = faces[p.face].box;
        t.last_seq = seq;
        t.last_pts = pts;
        t.profile = faces[p.face].yaw != 0;
        t.frames_seen++;
        out[p.face] = {t.id, false};
    }
    for (size_t f = 0; f < faces.size(); f++) {
        if (face_done[f]) continue;
        Track t{next_id_++, faces[f].box, seq, seq, 1, pts, faces[f].yaw != 0};
        tracks_.push_back(t);
        out[f] = {t.id, true};
    }
    return out;
}

std::vector<Track> FaceTracker::take_lost(int64_t pts) {
    std::vector<Track> lost;
    auto gone = [&](const Track &t) { return pts - lost_after_ns_ > t.last_pts; };
    for (const Track &t : tracks_)
        if (gone(t)) lost.push_back(t);
    tracks_.erase(std::remove_if(tracks_.begin(), tracks_.end(), gone), tracks_.end());
    return lost;
}

std::vector<NearFace> FaceTracker::boxes() const {
    std::vector<NearFace> out;
    for (const Track &t : tracks_) out.push_back({t.box, t.profile});
    return out;
}

} // namespace cvhost_face
