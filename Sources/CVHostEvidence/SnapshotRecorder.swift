import CVHostCore
import CVHostLines
import Foundation

/// Snapshots: a JPEG of the frame an event came from (or of the event's box, with a margin), for
/// the events named; for `track.ended`, the track's best frame instead (FrameQuality: score, area,
/// sharpness; the frame it ends on no longer shows it), kept as a JPEG in memory while the track
/// lasts. The frame is the one the event's line came with (`FrameResults`: the frame a plugin
/// processed, or one passed over before it), the host's own copy whether the plugin ran here, in a
/// worker or in Python; when that frame's picture was not kept, the nearest one that was, said by
/// `snapshot_frame`. The event's line gets the snapshot's path (`snapshot`) before any output sees
/// it, and the JPEG is encoded and written on a queue of its own. A snapshot not made is counted by
/// reason (`dropped_reasons`) and said once.
package final class SnapshotRecorder: @unchecked Sendable {
    // @unchecked Sendable: the state is behind a lock; the encoder is used on `queue` only.
    private let settings: EvidenceSettings
    private let on: Set<String>
    let folder: EvidenceFolder
    private let queue = DispatchQueue(label: "cvhost.snapshots")
    private let encoder = JPEGEncoder()
    private let drawing = SnapshotDrawing()
    private let said: (String) -> Void
    /// Each input's record stream's newest keyframes (`from=record`), by source.
    private let keyframes: Locked<[String: RecordKeyframes]>
    /// Snapshots are taken from the inputs' record streams (`from=record`), where they have one.
    var fromRecord: Bool { settings.fromRecord }

    private struct State {
        var queued = 0
        var saved = 0
        var bytes: UInt64 = 0
        /// Snapshots not made, by reason: disk_full (no room), busy (too many waiting), no_frame (no
        /// frame near the event was kept), failed (the picture could not be encoded).
        var dropped: [String: Int] = [:]
        /// Per track ("source#id"): the best score x area tried so far, and the best frame's JPEG.
        var tried: [String: Double] = [:]
        var best: [String: (quality: Double, jpeg: [UInt8], sequence: UInt64)] = [:]
    }
    private let state = Locked(State())

    /// Snapshots waiting to be encoded at most: past it, an event's snapshot is dropped (counted).
    static let mostQueued = 32

    init(settings: EvidenceSettings, events: [String], folder: EvidenceFolder, said: @escaping (String) -> Void,
         keyframes: Locked<[String: RecordKeyframes]> = Locked([:])) {
        self.keyframes = keyframes
        self.settings = settings
        on = Set(events)
        self.folder = folder
        self.said = said
    }

    /// The boxes of one frame's results (after the analytics gave them their tracks): an event's
    /// box by its track, and every box with its label (drawn with draw=true).
    private struct FrameBoxes {
        var sequence: UInt64
        var byTrack: [Int: ResultFields.Bounds] = [:]
        var marks: [SnapshotDrawing.Mark] = []

        init(_ results: FrameResults) {
            sequence = results.frame.sequence
            for line in results.lines where line.sequence == sequence {
                guard let result = line.result, result.fields.bounds != nil else { continue }
                if let track = line.track { byTrack[track] = result.fields.bounds }
                marks.append(SnapshotRecorder.mark(result, track: line.track))
            }
        }
    }

    /// One frame's lines (and those of the frames passed over before it), with the paths of their
    /// snapshots when they are events snapshots are kept of (and their URLs under `urlBase`, the
    /// live view's address, when it runs).
    func annotate(_ results: inout FrameResults, urlBase: String? = nil) {
        let boxes = FrameBoxes(results)
        for i in results.lines.indices { results.lines[i] = annotate(results.lines[i], in: results, boxes: boxes, urlBase: urlBase) }
    }

    /// The lines that close an input (its tracks' ends: their best frames), after `last`, the last
    /// frame processed.
    func annotate(closing lines: inout [OutputLine], last: ProcessedFrame?, urlBase: String? = nil) {
        guard let last else {
            for i in lines.indices where lines[i].route.event == "track.ended" { lines[i] = annotate(lines[i], in: nil, boxes: nil, urlBase: urlBase) }
            return
        }
        var results = FrameResults(frame: last, lines: lines)
        for i in lines.indices { results.lines[i] = annotate(lines[i], in: results, boxes: nil, urlBase: urlBase) }
        lines = results.lines
    }

    private func annotate(_ line: OutputLine, in results: FrameResults?, boxes: FrameBoxes?, urlBase: String?) -> OutputLine {
        guard let source = line.route.source else { return line }
        if line.route.event == "track.ended", on.contains("track.ended"), let track = line.track {
            return bestSnapshot(line, source: source, track: track, urlBase: urlBase)
        }
        // The frame, with its picture: encoded as the plugin saw it (turned as it was: what its
        // boxes are in), on the queue.
        guard let sequence = line.sequence, let results else { return line }
        let own = results.frame(sequence: sequence).flatMap { $0.sample != nil ? $0 : nil }
        if let own, on.contains("track.ended") { considerBest(line, source: source, frame: own) }
        guard on.contains(line.route.event) else { return line }
        // Its own frame's picture not kept (a frame passed over, beyond the newest kept): the nearest that was.
        guard let frame = own ?? results.nearestWithPicture(to: sequence) else {
            drop("no_frame", "an event's snapshot was not made: no frame near it was kept (\(source) frame \(sequence))")
            return line
        }
        let taken = state.withLock { s -> Bool in
            guard s.queued < Self.mostQueued else { return false }
            s.queued += 1
            return true
        }
        guard taken else {
            drop("busy", "snapshots are dropped: \(Self.mostQueued) wait to be encoded already (the disk or the CPU is too slow for the events asked; on= fewer)")
            return line
        }
        let inFrame = boxes.flatMap { $0.sequence == sequence ? $0 : nil }
        let box = line.result?.fields.bounds ?? line.track.flatMap { inFrame?.byTrack[$0] }
        let marks = settings.draw ? (inFrame?.marks ?? []) : []
        if settings.fromRecord, let key = keyframes.withLock({ $0[source] })?.nearest(to: frame.presentationTimeNs) {
            return recordSnapshot(line, key: key, frame: frame, box: box, marks: marks, source: source, urlBase: urlBase)
        }
        let name = Self.fileName(source: source, sequence: frame.sequence, event: line.route.event.replacingOccurrences(of: ".", with: "_"), line)
        // A box outside its frame (a plugin's mistake) gets the whole frame: the line names a file that is made.
        let region = settings.crop ? box.map(cropRegion).flatMap { $0.fitted(width: frame.width, height: frame.height) } : nil
        queue.async { [self] in
            defer { state.withLock { $0.queued -= 1 } }
            guard let pixels = frame.picture(in: .i420) else {
                return drop("failed", "a snapshot of \(source) frame \(frame.sequence) was not made: its picture could not be read")
            }
            let jpeg: [UInt8]
            do {
                jpeg = try encoder.encode(drawn(pixels, marks), maxWidth: 1 << 16, region: region)
            } catch {
                drop("failed", "a snapshot of \(source) frame \(frame.sequence) was not made: \(error)")
                return
            }
            store(name, jpeg, source: source, event: line.route.event, label: line.label ?? "")
        }
        return pointing(line, to: name, frame: frame.sequence != sequence ? frame.sequence : nil, urlBase: urlBase)
    }

    /// `line` with its snapshot's path (`snapshot`), the frame it is of when not the line's own
    /// (`snapshot_frame`), and its URL under the live view's address (`snapshot_url`).
    private func pointing(_ line: OutputLine, to name: String, frame: UInt64? = nil, urlBase: String?) -> OutputLine {
        var annotated = line.with(envelopeField: "snapshot", folder.path + "/" + name)
        if let frame { annotated = annotated.with(envelopeField: "snapshot_frame", Int(frame)) }
        return urlBase.map { annotated.with(envelopeField: "snapshot_url", "\($0)/snapshots/\(name)") } ?? annotated
    }

    /// The event's snapshot from the input's record stream: its keyframe nearest the event's frame,
    /// decoded on the queue, the event's box and marks scaled from the frame's pixels to its.
    private func recordSnapshot(_ line: OutputLine, key: EncodedPacket, frame: ProcessedFrame, box: ResultFields.Bounds?,
                                marks: [SnapshotDrawing.Mark], source: String, urlBase: String?) -> OutputLine {
        let name = Self.fileName(source: source, sequence: frame.sequence, event: line.route.event.replacingOccurrences(of: ".", with: "_") + "-record", line)
        let crop = settings.crop ? box.map(cropRegion) : nil
        queue.async { [self] in
            defer { state.withLock { $0.queued -= 1 } }
            let decoded: PixelBuffer
            do throws(KeyframeDecoder.Failure) {
                decoded = try KeyframeDecoder.picture(key, name: source)
            } catch {
                return drop("failed", "a snapshot of \(source)'s record stream was not made: \(error)")
            }
            let pixels = decoded.format == .i420 ? decoded : decoded.converted(to: .i420)
            // The frame's pixels to the record stream's (a sub-stream's box on the main stream's picture).
            let sx = Double(pixels.width) / Double(max(1, frame.width)), sy = Double(pixels.height) / Double(max(1, frame.height))
            func scaled(_ r: JPEGEncoder.Region) -> JPEGEncoder.Region {
                Self.region(x: Double(r.x) * sx, y: Double(r.y) * sy, width: Double(r.width) * sx, height: Double(r.height) * sy)
            }
            let region = crop.map(scaled).flatMap { $0.fitted(width: pixels.width, height: pixels.height) }
            let jpeg: [UInt8]
            do {
                jpeg = try encoder.encode(drawn(pixels, marks.map { SnapshotDrawing.Mark(region: scaled($0.region), label: $0.label) }),
                                          maxWidth: 1 << 16, region: region)
            } catch {
                return drop("failed", "a snapshot of \(source)'s record stream was not made: \(error)")
            }
            store(name, jpeg, source: source, event: line.route.event, label: line.label ?? "")
        }
        return pointing(line, to: name, urlBase: urlBase)
    }

    /// A snapshot not made: counted by `reason`, `message` said (once: the same words are not said again).
    private func drop(_ reason: String, _ message: String) {
        state.withLock { $0.dropped[reason, default: 0] += 1 }
        said(message)
    }

    /// A tracked result whose score x area beats its track's best tried so far: its frame is
    /// measured (sharpness) and, if it is the best, encoded and kept in memory, on the queue.
    private func considerBest(_ line: OutputLine, source: String, frame: ProcessedFrame) {
        guard let result = line.result, let b = result.fields.bounds, let track = line.track else { return }
        let key = "\(source)#\(track)", score = (result.fields.confidence ?? 1) * b.width * b.height, sequence = frame.sequence
        guard state.withLock({ s -> Bool in
            guard score > (s.tried[key] ?? 0) * 1.05, s.queued < Self.mostQueued else { return false }
            s.tried[key] = score
            s.queued += 1
            return true
        }) else { return }
        let box = Self.region(x: b.x, y: b.y, width: b.width, height: b.height)
        let region = settings.crop ? cropRegion(b) : nil
        queue.async { [self] in
            defer { state.withLock { $0.queued -= 1 } }
            guard let pixels = frame.picture(in: .i420) else { return }
            let quality = FrameQuality.quality(score: result.fields.confidence ?? 1, area: b.width * b.height,
                                               sharpness: FrameQuality.sharpness(pixels, box: box))
            let marks = settings.draw ? [Self.mark(result, track: track)] : []
            guard quality > state.withLock({ $0.best[key]?.quality ?? 0 }),
                  let jpeg = try? encoder.encode(drawn(pixels, marks), maxWidth: 1 << 16, region: region) else { return }
            state.withLock { $0.best[key] = (quality, jpeg, sequence) }
        }
    }

    /// A track ended: its best frame is written (on the queue, after every frame tried for it) and the line says where.
    private func bestSnapshot(_ line: OutputLine, source: String, track: Int, urlBase: String?) -> OutputLine {
        let key = "\(source)#\(track)"
        guard state.withLock({ $0.tried.removeValue(forKey: key) }) != nil else { return line }
        // Every frame tried for it measured first (a few at most: a track ends once), so that its
        // name says which frame it is.
        queue.sync {}
        guard let best = state.withLock({ $0.best.removeValue(forKey: key) }) else { return line }
        let name = Self.fileName(source: source, sequence: best.sequence, event: "track_ended-track\(track)", line)
        queue.async { [self] in store(name, best.jpeg, source: source, event: "track.ended", label: line.label ?? "") }
        return pointing(line, to: name, urlBase: urlBase)
    }

    /// A result's box and its label as drawn: "person #12 87%".
    package static func mark(_ result: OutputLine.Result, track: Int?) -> SnapshotDrawing.Mark {
        let b = result.fields.bounds ?? ResultFields.Bounds(x: 0, y: 0, width: 0, height: 0)
        let score = result.fields.confidence.map { " \(Int(clamped: $0 * 100, .toNearestOrAwayFromZero, to: -9999...9999))%" } ?? ""
        let label = String((result.fields.label ?? result.type).prefix(SnapshotDrawing.maxLabel)) + (track.map { " #\($0)" } ?? "") + score
        return SnapshotDrawing.Mark(region: region(x: b.x, y: b.y, width: b.width, height: b.height), label: label)
    }

    /// A plugin's box (Doubles) as pixels, rounded outward and clamped: `ResultFields.boundsProblem`
    /// refuses a box past any frame before it comes here; this keeps the arithmetic from trapping
    /// whatever comes (a crop's margin around a box at the edge of the allowed).
    package static func region(x: Double, y: Double, width: Double, height: Double) -> JPEGEncoder.Region {
        let limit = -(1 << 24)...(1 << 24)
        return JPEGEncoder.Region(x: Int(clamped: x, .down, to: limit), y: Int(clamped: y, .down, to: limit),
                                  width: Int(clamped: width, .up, to: limit), height: Int(clamped: height, .up, to: limit))
    }

    /// The frame with `marks` drawn on it (a copy); the frame as it is when there are none, or
    /// when they cannot be drawn (said once).
    private func drawn(_ pixels: PixelBuffer, _ marks: [SnapshotDrawing.Mark]) -> PixelBuffer {
        guard !marks.isEmpty else { return pixels }
        let yuv = pixels.format == .i420 ? pixels : pixels.converted(to: .i420)
        do {
            return try drawing.draw(yuv, marks: marks)
        } catch {
            said("snapshots' boxes are not drawn: \(error)")
            return pixels
        }
    }

    /// `SOURCE-SEQ-EVENT-N-SESSION.jpg`: the input made safe for a file name, the frame's seq, the
    /// event's kind, the number of its line (its event id's last part) and the run's session.
    static func fileName(source: String, sequence: UInt64, event: String, _ line: OutputLine) -> String {
        let number = line.eventID.map { String($0.split(separator: "-").last ?? "") } ?? "0"
        return "\(EvidenceNames.safe(source))-\(sequence)-\(event)-\(number)-\(Producer.session.prefix(8)).jpg"
    }

    /// A box with `margin` of its size around it.
    private func cropRegion(_ b: ResultFields.Bounds) -> JPEGEncoder.Region {
        let mx = b.width * settings.margin, my = b.height * settings.margin
        return Self.region(x: b.x - mx, y: b.y - my, width: b.width + 2 * mx, height: b.height + 2 * my)
    }

    /// Writes a snapshot within the folder's budget (on the queue); a full disk drops it, counted and said.
    private func store(_ name: String, _ jpeg: [UInt8], source: String, event: String, label: String) {
        guard folder.makeRoom(for: UInt64(jpeg.count)) else {
            return drop("disk_full", "the snapshots folder \(folder.path) is full (max_gb, min_free_gb) and holds nothing of cvhost's to delete: snapshots are dropped (dropped.disk_full)")
        }
        if let e = folder.write(name, bytes: jpeg, source: source, event: event, label: label) {
            return drop("disk_full", "cannot write snapshots in \(folder.path): \(e)")
        }
        state.withLock { s in
            s.saved += 1
            s.bytes += UInt64(jpeg.count)
        }
    }

    /// Waits until every snapshot queued is written.
    func drain() { queue.sync {} }

    var counts: (saved: Int, bytes: UInt64, dropped: [String: Int]) {
        state.withLock { ($0.saved, $0.bytes, $0.dropped) }
    }

    /// The reasons a snapshot is not made (each a label of cvhost_snapshots_dropped_total).
    package static let dropReasons = ["disk_full", "busy", "no_frame", "failed"]
}
