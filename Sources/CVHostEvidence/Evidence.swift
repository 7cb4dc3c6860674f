import CVHostCore
import CVHostLines
import Dispatch

/// The evidence room of a run (`--snapshots`, `--clips`): what it keeps of what cvhost saw. Each
/// runner hands it every frame's results before they are written (a `FrameStage`: the frame and
/// its lines together, so an event's snapshot is of its own frame; its path goes into its line, and
/// an event starts or extends its input's clip); it sees each input's encoded packets (`observer`)
/// and writes `clip.saved` lines to the outputs it is given (`connect`), as the runners write
/// theirs. Its disk use stays within each folder's budget; a full disk drops what would be written
/// (counted, said once) and the run goes on.
public final class Evidence: FrameStage, @unchecked Sendable {
    // @unchecked Sendable: the folders and settings are made at init; the rest is behind locks.
    private let snapshots: SnapshotRecorder?
    private let clipSettings: EvidenceSettings?
    private let clipEvents: Set<String>
    private let clipFolder: EvidenceFolder?
    private let recorders = Locked<[String: ClipRecorder]>([:])
    /// Each input's record stream's newest keyframes, for snapshots taken from it (`from=record`).
    private let keyframes = Locked<[String: RecordKeyframes]>([:])
    private let encoders = Locked<[FrameEncoder]>([])
    private let out = Locked<OutputSink?>(nil)
    private let warnings = OnceWarnings()
    /// The live view's address, when it runs: lines then carry the files' URLs too.
    private let urlBase = Locked<String?>(nil)
    private let counts = Locked((clips: 0, clipBytes: UInt64(0), clipsDropped: 0))
    /// Sweeps the folders of files past `max_age` every `sweepSeconds`, between writes too.
    private let sweeper: DispatchSourceTimer
    static let sweepSeconds = 60.0

    /// - Parameter defaultEvents: the events kept when a setting names none (`on=`).
    /// - Throws: `EvidenceError` when a folder cannot be used (another user's, or not a folder).
    public init(snapshots: EvidenceSettings?, clips: EvidenceSettings?, defaultEvents: [String]) throws(EvidenceError) {
        let warnings = self.warnings
        let warn: @Sendable (String) -> Void = { warnings.say($0) }
        if let s = snapshots {
            let folder = try EvidenceFolder(s.folder, kind: .snapshots, role: "the snapshots folder", setting: "--snapshots", budget: s.budget)
            folder.sweep()
            self.snapshots = SnapshotRecorder(settings: s, events: s.on ?? defaultEvents, folder: folder, said: warn, keyframes: keyframes)
        } else {
            self.snapshots = nil
        }
        if let c = clips {
            let folder = try EvidenceFolder(c.folder, kind: .clips, role: "the clips folder", setting: "--clips", budget: c.budget)
            folder.sweep()
            clipFolder = folder
        } else {
            clipFolder = nil
        }
        clipSettings = clips
        clipEvents = Set(clips.map { $0.on ?? defaultEvents } ?? [])
        let folders = [self.snapshots?.folder, clipFolder].compactMap { $0 }
        sweeper = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "cvhost.evidence.sweep"))
        sweeper.schedule(deadline: .now() + Self.sweepSeconds, repeating: Self.sweepSeconds)
        sweeper.setEventHandler { folders.forEach { $0.sweep() } }
        sweeper.resume()
    }

    deinit { sweeper.cancel() }

    /// The live view serves the files at `url` (its address): `snapshot_url` and a clip's `url` go into the lines.
    public func serve(at url: String?) {
        urlBase.withLock { $0 = url.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 } }
    }

    /// Clips are kept (`--clips`).
    public var keepsClips: Bool { clipSettings != nil }

    /// Snapshots are taken from the inputs' record streams (`--snapshots DIR:from=record`).
    public var snapshotsFromRecord: Bool { snapshots?.fromRecord == true }

    /// Where `clip.saved` lines go (the run's outputs), once they are open.
    public func connect(_ sink: OutputSink) {
        out.withLock { $0 = sink }
    }

    /// What sees the encoded packets of the input `source`, when clips are kept.
    public func observer(forInput source: String) -> EncodedPacketObserver? {
        guard let settings = clipSettings, let folder = clipFolder else { return nil }
        return recorders.withLock { r in
            if let existing = r[source] { return existing }
            let recorder = ClipRecorder(source: source, settings: settings, folder: folder) { [weak self] in self?.clip($0) }
            r[source] = recorder
            return recorder
        }
    }

    /// What sees the packets of the input `source`'s record stream (`--input ...,record=URL`): its
    /// clips' recorder, when clips are kept, and its newest keyframes, when snapshots are taken from
    /// it (`from=record`); nil when neither is.
    public func recordObserver(forInput source: String) -> EncodedPacketObserver? {
        var observers: [EncodedPacketObserver] = []
        if let clips = observer(forInput: source) { observers.append(clips) }
        if snapshots?.fromRecord == true {
            let k = RecordKeyframes()
            keyframes.withLock { $0[source] = k }
            observers.append(k)
        }
        return observers.count > 1 ? EncodedPacketFanOut(observers) : observers.first
    }

    /// For an input with no encoded stream (the test pattern, a raw camera): an output of its
    /// session that encodes its frames to H.264 for its clips (libx264), when clips are kept.
    public func encoderOutput(forInput source: String) -> VideoDataOutput? {
        guard let recorder = observer(forInput: source) else { return nil }
        let warnings = self.warnings
        let encoder = FrameEncoder(source: source, observer: recorder, said: { warnings.say($0) })
        encoders.withLock { $0.append(encoder) }
        return encoder.output
    }

    /// One frame's results, before they are written: an event's clip started or extended, its
    /// snapshot taken of the frame it came with.
    public func frame(_ results: inout FrameResults) {
        for line in results.lines { clipEvent(line) }
        snapshots?.annotate(&results, urlBase: urlBase.withLock { $0 })
    }

    /// The lines that close an input (its tracks' ends).
    public func finish(_ lines: inout [OutputLine], last: ProcessedFrame?) {
        for line in lines { clipEvent(line) }
        snapshots?.annotate(closing: &lines, last: last, urlBase: urlBase.withLock { $0 })
    }

    /// Snapshots of events between two frames a plugin processed are of their own frames.
    public var needsPassedOverPictures: Bool { snapshots != nil }

    /// An event clips are kept of: its input's clip started or extended.
    private func clipEvent(_ line: OutputLine) {
        guard !clipEvents.isEmpty, clipEvents.contains(line.route.event), let source = line.route.source, let pts = line.ptsNs,
              let recorder = recorders.withLock({ $0[source] }) else { return }
        recorder.event(id: line.eventID ?? "", kind: line.route.event, label: line.label ?? "", ptsNs: pts)
    }

    /// The input `source` stopped: its open clip is finished with what it has (its clip.saved
    /// written), and what served its clips is let go (an input added and removed every few seconds
    /// for a month leaves nothing behind; one opened again under its name gets new ones).
    public func finishInput(_ source: String) {
        let recorder = recorders.withLock { $0.removeValue(forKey: source) }
        recorder?.drain()
        keyframes.withLock { _ = $0.removeValue(forKey: source) }
        encoders.withLock { $0.removeAll { $0.source == source } }
        snapshots?.drain()
    }

    /// The inputs ended or the run stops: open clips are finished with what they have, every
    /// snapshot queued is written. Call before the outputs close (the clip.saved lines go to them);
    /// again, it does nothing more. It lets go of the outputs.
    public func finish() {
        for r in recorders.withLock({ Array($0.values) }) { r.drain() }
        snapshots?.drain()
        sweeper.cancel()
        out.withLock { $0 = nil }
    }

    /// `GET /clips`, `GET /snapshots` (`kind`): the files kept, newest first, as a JSON object
    /// `{"clips": [{file, url, source, event, label, bytes, made}...]}`; filtered by `source`, `event`
    /// (its kind), `label`, `since` (seconds since the epoch) and `limit` (100 by default, at most 1000). nil
    /// when this run keeps none of that kind.
    /// - Parameter events: what a file is the evidence of (the event store's rows naming it), for its entry's `events`.
    public func list(_ kind: String, query: [String: String], events: ((String) -> [JSONObject])? = nil) -> (status: Int, json: String)? {
        guard let folder = kind == "clips" ? clipFolder : kind == "snapshots" ? snapshots?.folder : nil else { return nil }
        var limit = 100
        if let l = query["limit"] {
            guard let n = Int(l), (1...1000).contains(n) else { return (400, Self.error("limit is a number from 1 to 1000, not '\(l.prefix(40))'")) }
            limit = n
        }
        var since: Int64 = .min
        if let s = query["since"] {
            guard let t = Double(s), t.isFinite, abs(t) < 1e11 else { return (400, Self.error("since is seconds since the epoch, not '\(s.prefix(40))'")) }
            since = Int64(t * 1e9)
        }
        let picked = folder.entries.filter { e in
            e.madeNs >= since && query["source"].map { $0 == e.source } ?? true && query["event"].map { $0 == e.event } ?? true
                && query["label"].map { $0 == e.label } ?? true
        }.prefix(limit)
        var o = JSONObject()
        o.set(kind, array: picked.map { e in
            var j = JSONObject()
            j.set("file", e.name)
            j.set("url", "/\(kind)/\(e.name)")
            j.set("source", e.source)
            j.set("event", e.event)
            j.set("label", e.label.isEmpty ? nil : e.label)
            j.set("bytes", e.bytes)
            j.setSeconds("made", nanoseconds: e.madeNs)
            if let events { j.set("events", array: events(e.name)) }
            return j
        })
        return (200, o.text)
    }

    /// `GET /clips/NAME`, `GET /snapshots/NAME`: one of the files this run's folder holds, opened
    /// to be read (the caller closes it), with its size and type.
    public func open(_ kind: String, name: String) -> (descriptor: Int32, size: UInt64, contentType: String)? {
        guard let folder = kind == "clips" ? clipFolder : kind == "snapshots" ? snapshots?.folder : nil,
              let (fd, size) = folder.open(name) else { return nil }
        return (fd, size, kind == "clips" ? "video/mp4" : "image/jpeg")
    }

    private static func error(_ message: String) -> String {
        var o = JSONObject()
        o.set("error", message)
        return o.text
    }

    /// What was kept and dropped, for the final metrics and /metrics.
    public var statistics: EvidenceStatistics {
        let c = counts.withLock { $0 }
        let s = snapshots?.counts
        return EvidenceStatistics(clips: c.clips, clipBytes: c.clipBytes, clipsDropped: c.clipsDropped, snapshots: s?.saved ?? 0,
                                  snapshotBytes: s?.bytes ?? 0, snapshotsDropped: s?.dropped ?? [:], clipsDeleted: clipFolder?.deleted ?? 0,
                                  snapshotsDeleted: snapshots?.folder.deleted ?? 0)
    }

    private func clip(_ outcome: ClipOutcome) {
        switch outcome {
        case .saved(let c):
            counts.withLock { n in
                n.clips += 1
                n.clipBytes += c.bytes
            }
            var o = JSONObject.envelope(event: "clip.saved", source: c.source, tsNs: HostClock.wallNs(), ptsNs: c.startNs)
            var d = JSONObject()
            d.set("path", c.path)
            d.set("file", c.file)
            d.setSeconds("start_pts", nanoseconds: c.startNs)
            d.setSeconds("end_pts", nanoseconds: c.endNs)
            d.setSeconds("start_ts", nanoseconds: c.startWallNs)
            d.setSeconds("end_ts", nanoseconds: c.endWallNs)
            d.set("seconds", Double(c.endNs.subtractingClamped(c.startNs)) / 1e9)
            d.set("bytes", c.bytes)
            d.set("packets", c.packets)
            d.set("events", strings: c.events)
            if let base = urlBase.withLock({ $0 }) { d.set("url", "\(base)/clips/\(c.file)") }
            o.set("data", object: d)
            out.withLock { $0 }?.write(o.line())
        case .dropped(let reason, _):
            counts.withLock { $0.clipsDropped += 1 }
            warnings.say(reason)
        }
    }
}

/// Each warning said once a run: a full disk is said when it first refuses, not for every event.
final class OnceWarnings: Sendable {
    private let said = Locked<Set<String>>([])

    func say(_ message: String) {
        guard said.withLock({ $0.insert(message).inserted }) else { return }
        Log.warning(message + " (said once; the run goes on)")
    }
}

/// What the evidence room kept and dropped.
public struct EvidenceStatistics: Sendable, Equatable {
    public var clips = 0
    public var clipBytes: UInt64 = 0
    public var clipsDropped = 0
    public var snapshots = 0
    public var snapshotBytes: UInt64 = 0
    /// Snapshots not made, by reason (`SnapshotRecorder.dropReasons`).
    public var snapshotsDropped: [String: Int] = [:]
    /// Files deleted to keep a folder's budget (the oldest first, or past max_age).
    public var clipsDeleted = 0
    public var snapshotsDeleted = 0
}
