import CVHostCore
import CVHostLines
import Foundation
import Glibc

/// The clips of one input: a ring of its encoded packets (back to the keyframe at or before `pre`
/// seconds, plus what the plugins have not caught up with yet), and at most one clip being written.
/// An event starts a clip at the keyframe at or before its frame's time minus `pre`, and the clip
/// ends `post` seconds after the last event that extends it (at most `max` seconds long):
/// overlapping events share one clip. Packets arrive on the capture thread and are only kept
/// there; the clip is written on a queue of its own.
final class ClipRecorder: EncodedPacketObserver, @unchecked Sendable {
    // @unchecked Sendable: the state is behind a lock; the writer is used on `queue` only.
    let source: String
    private let settings: EvidenceSettings
    private let folder: EvidenceFolder
    private let said: (ClipOutcome) -> Void
    private let queue: DispatchQueue

    private struct OpenClip {
        let name: String
        let descriptor: Int32
        /// Media time the clip ends at (the last event's + post), and the latest it may (start + max).
        var until: Int64
        let hardEnd: Int64
        var events: [String]
    }

    private struct State {
        var ring: [EncodedPacket] = []
        var ringBytes = 0
        var clip: OpenClip?
        /// The writer of the clip named, once made on the queue (it outlives `clip` until finished there).
        var writer: (name: String, writer: ClipWriter)?
        var clips = 0
        /// Events that came before the ring had a keyframe (a raw camera's encoder still starting,
        /// slower than the plugins' first results): the clip starts at the first keyframe within
        /// their `post`.
        var pending: [PendingEvent] = []
    }

    private struct PendingEvent {
        let id: String, kind: String, label: String, ptsNs: Int64
    }
    /// Events kept waiting for a keyframe at most (the newest kept).
    static let mostPending = 256
    private let state = Locked(State())

    /// The ring's bound beyond `pre`: how far the plugins' results may lag the packets read (a
    /// live camera's, well under a second; a file's, its queue of a frame or two).
    static let lagSeconds = 3.0
    static let ringMaxBytes = 256 << 20

    /// - Parameter said: what became of each clip (its `clip.saved` line, or a drop), on the writer's queue.
    init(source: String, settings: EvidenceSettings, folder: EvidenceFolder, said: @escaping (ClipOutcome) -> Void) {
        self.source = source
        self.settings = settings
        self.folder = folder
        self.said = said
        queue = DispatchQueue(label: "cvhost.clips.\(source)")
    }

    // MARK: - EncodedPacketObserver (the capture thread)

    func encodedPacket(_ packet: EncodedPacket) {
        var dropped: String?
        let ends = state.withLock { s -> Bool in
            s.ring.append(packet)
            s.ringBytes += packet.size
            trim(&s)
            if s.clip == nil, packet.isKeyframe, let last = s.pending.last {
                let waiting = s.pending
                s.pending = []
                // The first keyframe after events that found none: their clip starts here, if it is within their post.
                if packet.ptsNs <= last.ptsNs.addingClamped(Int64(settings.post * 1e9)) {
                    dropped = begin(&s, from: s.ring.count - 1, events: waiting)
                }
                return false
            }
            guard s.clip != nil else { return false }
            if packet.ptsNs > s.clip!.until || packet.ptsNs > s.clip!.hardEnd { return true }
            // Queued under the lock: in the order the packets came, after the clip's pre-roll.
            queueWrite([packet])
            return false
        }
        if let dropped { said(.dropped(reason: dropped, diskFull: true)) }
        if ends { close() }
    }

    func encodedStreamEnded() {
        close()
        state.withLock { s in
            // A new connection may bring another format: its packets start a new ring.
            s.ring.removeAll()
            s.ringBytes = 0
        }
    }

    /// Keeps the packets from the last keyframe at or before `pre + lag` seconds before the newest.
    private func trim(_ s: inout State) {
        guard let newest = s.ring.last?.ptsNs else { return }
        // A stream's timestamps are the camera's: any Int64, so no arithmetic on them may trap.
        let keep = newest.subtractingClamped(Int64((settings.pre + Self.lagSeconds) * 1e9))
        // The latest keyframe at or before `keep`: everything before it can go.
        if let cut = s.ring.lastIndex(where: { $0.isKeyframe && $0.ptsNs <= keep }), cut > 0 {
            s.ringBytes -= s.ring[..<cut].reduce(0) { $0 + $1.size }
            s.ring.removeFirst(cut)
        }
        while s.ringBytes > Self.ringMaxBytes, s.ring.count > 1 {
            s.ringBytes -= s.ring.removeFirst().size
        }
    }

    // MARK: - Events

    /// An event (of kind `kind`) of this input at media time `ptsNs` (its frame's): starts a clip or
    /// extends the open one; with no keyframe kept yet, it waits for the first (`pending`).
    func event(id: String, kind: String, label: String, ptsNs: Int64) {
        let post = Int64(settings.post * 1e9)
        var dropped: String?
        state.withLock { s in
            if var clip = s.clip {
                clip.until = min(clip.hardEnd, max(clip.until, ptsNs.addingClamped(post)))
                clip.events.append(id)
                s.clip = clip
                return
            }
            let event = PendingEvent(id: id, kind: kind, label: label, ptsNs: ptsNs)
            // From the keyframe at or before the event's time minus pre (the earliest kept, if the ring is shorter).
            let from = ptsNs.subtractingClamped(Int64(settings.pre * 1e9))
            guard let start = s.ring.lastIndex(where: { $0.isKeyframe && $0.ptsNs <= from }) ?? s.ring.firstIndex(where: \.isKeyframe) else {
                s.pending.append(event)
                if s.pending.count > Self.mostPending { s.pending.removeFirst(s.pending.count - Self.mostPending) }
                return
            }
            dropped = begin(&s, from: start, events: s.pending + [event])
            s.pending = []
        }
        if let dropped { said(.dropped(reason: dropped, diskFull: true)) }
    }

    /// Starts a clip at the ring's packet `start` (a keyframe) for `events`, the pre-roll queued.
    /// Called with the lock held. - Returns: why it was not started, or nil.
    private func begin(_ s: inout State, from start: Int, events: [PendingEvent]) -> String? {
        guard !events.isEmpty else { return nil }
        let backlog = Array(s.ring[start...])
        let first = backlog[0]
        let frameDuration = ClipRecorder.frameDuration(backlog)
        // Room for it: its pre-roll's bytes a second, for the whole clip.
        let span = max(1e-3, Double((backlog.last?.ptsNs ?? first.ptsNs).subtractingClamped(first.ptsNs)) / 1e9)
        let perSecond = Double(backlog.reduce(0) { $0 + $1.size }) / span
        let estimate = UInt64(clamped: perSecond * (settings.pre + settings.post), to: 0...UInt64.max)
        guard folder.makeRoom(for: estimate) else {
            return "the clips folder \(folder.path) is full (max_gb, min_free_gb) and holds nothing of cvhost's to delete"
        }
        s.clips += 1
        let name = ClipRecorder.fileName(source: source, ptsNs: first.ptsNs, number: s.clips)
        switch folder.start(name, source: source, event: events[0].kind, label: events[0].label) {
        case .success(let fd):
            let hardEnd = first.ptsNs.addingClamped(Int64(settings.maxSeconds * 1e9))
            let until = events.map(\.ptsNs).max()!.addingClamped(Int64(settings.post * 1e9))
            s.clip = OpenClip(name: name, descriptor: fd, until: until, hardEnd: hardEnd, events: events.map(\.id))
            // The writer, then the pre-roll, queued under the lock: before any packet that comes next.
            queue.async { [self] in
                do throws(ClipWriter.Failure) {
                    let writer = try ClipWriter(descriptor: fd, format: first.format, frameDuration: frameDuration)
                    state.withLock { $0.writer = (name, writer) }
                } catch {
                    fail(error, clip: name)
                }
            }
            queueWrite(backlog)
            return nil
        case .failure(let e):
            return "cannot make a clip in \(folder.path): \(e)"
        }
    }

    private func queueWrite(_ packets: [EncodedPacket]) {
        queue.async { [self] in
            guard let (name, writer) = state.withLock({ $0.writer }) else { return }
            do throws(ClipWriter.Failure) {
                for p in packets { try writer.write(p) }
            } catch {
                fail(error, clip: name)
            }
        }
    }

    /// The open clip is done (its time is up, or the input ended): finished on the queue.
    func close() {
        guard let clip = state.withLock({ s -> OpenClip? in
            defer { s.clip = nil }
            return s.clip
        }) else { return }
        queue.async { [self] in
            guard let writer = state.withLock({ s -> ClipWriter? in
                guard let w = s.writer, w.name == clip.name else { return nil }
                s.writer = nil
                return w.writer
            }) else {
                // Its writer failed after it was closed (`fail` said so): its file goes.
                Glibc.close(clip.descriptor)
                folder.discard(clip.name)
                return
            }
            do throws(ClipWriter.Failure) {
                _ = try writer.finish()
                var st = stat()
                let bytes = fstat(clip.descriptor, &st) == 0 ? UInt64(st.st_size) : 0
                Glibc.close(clip.descriptor)
                if let e = folder.finish(clip.name, bytes: bytes) {
                    said(.dropped(reason: "clips of \(source) are dropped: naming one in \(folder.path) failed: \(e)", diskFull: e.rawValue == ENOSPC))
                    return
                }
                said(.saved(ClipOutcome.Saved(file: clip.name, path: folder.path + "/" + clip.name, source: source,
                                              startNs: writer.firstPtsNs ?? 0, endNs: writer.lastPtsNs ?? 0,
                                              startWallNs: writer.firstWallNs ?? 0, endWallNs: writer.lastWallNs ?? 0, bytes: bytes,
                                              packets: writer.packets, events: clip.events)))
            } catch {
                Glibc.close(clip.descriptor)
                folder.discard(clip.name)
                said(.dropped(reason: "clips of \(source) are dropped: \(error) (in \(folder.path))", diskFull: error.cause?.rawValue == ENOSPC))
            }
        }
    }

    /// Waits until every clip handed to the queue is written.
    func drain() {
        close()
        queue.sync {}
    }

    /// A write failed (a full disk): the clip `name` is given up, its file deleted, the run goes
    /// on. (On the queue; the clip may have been closed already, and another begun.)
    private func fail(_ error: ClipWriter.Failure, clip name: String) {
        let fd = state.withLock { s -> Int32? in
            if s.writer?.name == name { s.writer = nil }
            guard let clip = s.clip, clip.name == name else { return nil }
            s.clip = nil
            return clip.descriptor
        }
        // A clip closed already is let go by its close, which finds no writer.
        if let fd {
            Glibc.close(fd)
            folder.discard(name)
        }
        said(.dropped(reason: "clips of \(source) are dropped: \(error) (in \(folder.path))", diskFull: error.cause?.rawValue == ENOSPC))
    }

    /// A frame's duration in the packets' time base: the smallest step between their presentation
    /// times (B-frames come out of order), for a muxer that must make decode times up.
    static func frameDuration(_ packets: [EncodedPacket]) -> Int64? {
        let times = packets.prefix(64).map(\.packet.pointee.pts).filter { $0 != Int64.min }.sorted()
        return zip(times, times.dropFirst()).map { $1.subtractingClamped($0) }.filter { $0 > 0 }.min()
    }

    /// `SOURCE-SECONDS-N.mp4`: the input's id made safe for a file name, the clip's start (media
    /// time, ms), and its number in the run.
    static func fileName(source: String, ptsNs: Int64, number: Int) -> String {
        "\(EvidenceNames.safe(source))-\(max(0, ptsNs / 1_000_000))ms-\(Producer.session.prefix(8))-\(number).mp4"
    }
}

/// What became of a clip.
enum ClipOutcome: Sendable {
    struct Saved: Sendable {
        let file: String
        let path: String
        let source: String
        let startNs: Int64
        let endNs: Int64
        /// When its first and last packet were read (wall clock, ns since the epoch).
        let startWallNs: Int64
        let endWallNs: Int64
        let bytes: UInt64
        let packets: Int
        let events: [String]
    }
    case saved(Saved)
    case dropped(reason: String, diskFull: Bool)
}

/// Names of evidence files.
enum EvidenceNames {
    /// An input's id as part of a file name: letters, digits, `-` and `_` (anything else `_`), at most 48.
    static func safe(_ source: String) -> String {
        let mapped = source.unicodeScalars.map { c -> Character in
            (c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || (c >= "0" && c <= "9") || c == "-" || c == "_" ? Character(c) : "_"
        }
        return String(String(mapped).prefix(48))
    }
}
