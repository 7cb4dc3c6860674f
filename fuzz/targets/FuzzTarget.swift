import CVHostAnalytics
import CVHostCore
import CVHostEvidence
import CVHostFleet
import CVHostLines
import CVHostOutput
import CVHostPlugins
import CVHostRun
import CVHostSources
import CVHostV4L2
import Foundation
import Glibc

/// The places where cvhost reads bytes that someone else wrote, each as a function of those
/// bytes: what libFuzzer calls (fuzz/cvhost-fuzz) and what FuzzRegressionTests replay (every
/// seed of fuzz/corpus and every finding of fuzz/findings). A target returns normally for any
/// input; a crash, a trap (an overflow, an index out of range), a hang or a broken promise
/// (`check`) is a finding.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// A file given as a plugin (`--plugin ./x.so`, or found by name): its ELF headers, tables
    /// and descriptor read without loading it (PluginInfo, ELFImage).
    case pluginFile = "plugin-file"
    /// A result a plugin emits, before it goes to stdout (JSONValidator).
    case jsonResult = "json-result"
    /// `--config FILE` (RunConfigFile, YAML through Yams).
    case configFile = "config-file"
    /// `--plugin barcode:key=value,...`, split and checked against the barcode plugin's options.
    case pluginOptions = "plugin-options"
    /// Commands on stdin: split into lines, each handled (CommandLines, LiveCommands).
    case stdinCommands = "stdin-commands"
    /// The body of `POST /controls` (LiveCommands, as HTTP's).
    case controlsBody = "controls-body"
    /// A message from a plugin's worker process, which runs the plugin's code (WorkerMessage,
    /// and a result in it checked as the host checks it).
    case workerMessage = "worker-message"
    /// A frame from an MJPEG camera (MJPEGDecoder: markers, then FFmpeg's decoder).
    case mjpegFrame = "mjpeg-frame"
    /// A broker output's spool segment as found on disk (SpoolRecord.survey: records, damage
    /// skipped to the next whole record, a tail cut short).
    case spoolRecord = "spool-record"
    /// An RTSP camera's packets with their arrival times, joined into frames as they arrive
    /// (AccessUnitJoiner: the gap, the slice layout, late packets, a frame without end).
    case rtspPackets = "rtsp-packets"
    /// A plugin's result (as it emitted it) through the host's check, the analytics (a track, a
    /// zone and a line) and the evidence (a snapshot's box, its drawn mark): no number traps.
    case resultStages = "result-stages"
    /// An evidence folder's index as found on disk (EvidenceFolder: a journal of any lines).
    case evidenceIndex = "evidence-index"
    /// A snapshot's region from any box, margin and frame size (SnapshotRecorder.region, fitted).
    case snapshotRegion = "snapshot-region"
    /// A key and value any client may write in a fleet's buckets (an input, a zone, a line, a
    /// track, a heartbeat, a lease), read as a node reads them and placed (SiteView).
    case siteEntries = "site-entries"

    /// Runs the target on one input.
    public func run(_ bytes: UnsafeBufferPointer<UInt8>) {
        switch self {
        case .pluginFile: Self.pluginFile(bytes)
        case .jsonResult: Self.jsonResult(bytes)
        case .configFile: Self.configFile(bytes)
        case .pluginOptions: Self.pluginOptions(bytes)
        case .stdinCommands: Self.stdinCommands(bytes)
        case .controlsBody: Self.controlsBody(bytes)
        case .workerMessage: Self.workerMessage(bytes)
        case .mjpegFrame: Self.mjpegFrame(bytes)
        case .spoolRecord: Self.spoolRecord(bytes)
        case .rtspPackets: Self.rtspPackets(bytes)
        case .resultStages: Self.resultStages(bytes)
        case .evidenceIndex: Self.evidenceIndex(bytes)
        case .snapshotRegion: Self.snapshotRegion(bytes)
        case .siteEntries: Self.siteEntries(bytes)
        }
    }

    public func run(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { run($0) }
    }

    /// A promise of the code under test that does not hold: stops the run like a crash, so
    /// that libFuzzer keeps the input.
    static func check(_ condition: Bool, _ message: @autoclosure () -> String) {
        if !condition { fatalError("fuzz check failed: \(message())") }
    }

    // MARK: - The targets

    static func pluginFile(_ bytes: UnsafeBufferPointer<UInt8>) {
        _ = try? PluginInfo(path: InputFile.pluginFile.holding(bytes))
    }

    static func jsonResult(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let minified = try? JSONValidator.minifiedObject(bytes) else { return }
        // What it lets through is one JSON object a reader can parse, minified for good.
        let again = minified.withUnsafeBufferPointer { try? JSONValidator.minifiedObject($0) }
        check(again == minified, "minifying twice changed \(String(decoding: minified.prefix(200), as: UTF8.self))")
        check(String(validating: minified, as: UTF8.self) != nil, "the minified object is not UTF-8")
        check(!minified.contains(UInt8(ascii: "\n")), "a newline inside a JSON line")
        let parsed = try? JSONSerialization.jsonObject(with: Data(minified), options: [.fragmentsAllowed])
        check(parsed is [String: Any], "Foundation cannot read the object: \(String(decoding: minified.prefix(200), as: UTF8.self))")
    }

    static func configFile(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let config = try? RunConfigFile(path: InputFile.configFile.holding(bytes)) else { return }
        let merged = config.merged(with: ["run", "--plugin", "null"])
        _ = config.locate("--plugin: x", commandLine: merged)
    }

    static func pluginOptions(_ bytes: UnsafeBufferPointer<UInt8>) {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let request = try? PluginRequest(parsing: "barcode:" + text) else { return }
        _ = try? PluginConfiguration(plugin: BarcodePluginInfo.shared, options: request.options, warn: { _ in })
    }

    static func stdinCommands(_ bytes: UnsafeBufferPointer<UInt8>) {
        var lines = CommandLines()
        lines.feed(bytes) { line in
            if case .command(let command) = line {
                checkAnswer(Commands.shared.handle(command, from: .stdin))
            }
        }
    }

    static func controlsBody(_ bytes: UnsafeBufferPointer<UInt8>) {
        checkAnswer(Commands.shared.handle(Array(bytes), from: .http))
    }

    /// Every command is answered by one `command.result` line, which is valid JSON.
    private static func checkAnswer(_ answer: LiveCommands.Answer) {
        let line = answer.line.finished()
        let valid = line.withUnsafeBufferPointer { try? JSONValidator.minifiedObject($0) }
        check(valid != nil, "the answer is not one JSON object: \(String(decoding: line.prefix(300), as: UTF8.self))")
    }

    static func workerMessage(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let message = WorkerMessage(decoding: Array(bytes)) else { return }
        // What was read is written back the same way, and read again the same.
        let encoded = message.encoded()
        let again = WorkerMessage(decoding: encoded)
        check(again?.encoded() == encoded, "a message does not survive encoding")
        if case .result(let type, let json) = message {
            let checked = type.withUnsafeBufferPointer { t in json.withUnsafeBufferPointer { try? EmittedResult.check(type: t, json: $0) } }
            if let checked {
                check(String(validating: checked.json, as: UTF8.self) != nil, "a result let through is not UTF-8")
                // Its line, and the line with a track id, are each one JSON object (the analytics' insert at a known offset).
                let line = checked.line(source: "s", plugin: "p", pluginIndex: 0)
                for bytes in [line.bytes, line.with(trackID: 7)?.bytes].compactMap({ $0 }) {
                    let valid = bytes.dropLast().withUnsafeBufferPointer { try? JSONValidator.minifiedObject($0) }
                    check(valid != nil, "a result line is not one JSON object: \(String(decoding: bytes.prefix(300), as: UTF8.self))")
                }
            }
        }
    }

    static func spoolRecord(_ bytes: UnsafeBufferPointer<UInt8>) {
        let all = Array(bytes)
        let s = SpoolRecord.survey(all[...])
        check(s.end <= all.count && s.lines >= 0, "the end \(s.end) past \(all.count) bytes")
        var at = 0
        for hole in s.damaged {
            check(!hole.isEmpty && hole.lowerBound >= at && hole.upperBound < s.end, "damage \(hole) out of order or past the end \(s.end)")
            at = hole.upperBound
        }
        // What is kept (up to the end) reads the same again: the cut is stable.
        check(SpoolRecord.survey(all[..<s.end]) == s, "the kept bytes survey otherwise")
    }

    /// Each packet is 6 bytes: its timestamp's step and its kind, the time since the last one
    /// (10 µs units), its size, and a slice's first macroblock.
    static func rtspPackets(_ bytes: UnsafeBufferPointer<UInt8>) {
        var j = AccessUnitJoiner()
        var pts: Int64 = 0
        var now: UInt64 = 0
        var at = 0
        while at + 6 <= bytes.count {
            let c = Array(bytes[at..<(at + 6)])
            at += 6
            switch c[0] & 3 {
            case 0: break
            case 1: pts += 3000
            case 2: pts -= 3000
            default: pts = Int64(Int8(bitPattern: c[5])) * 90_000
            }
            now += UInt64(UInt16(c[1]) << 8 | UInt16(c[2])) * 10_000
            // What the reader thread sees first: the deadline passed with no packet.
            if let deadline = j.deadline, now >= deadline { j.gapElapsed() }
            let size = max(1, Int(UInt16(c[3]) << 8 | UInt16(c[4])) * 4)
            let nal: UInt8 = [0x41, 0x65, 0x67, 0x06][Int(c[0] >> 2) & 3]
            let head: [UInt8] = c[0] & 0x10 != 0 ? [c[5], 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55]
                : [0, 0, 0, 1, nal, c[5], c[4], c[3], c[2], 0x80, 0, 0, 0]
            let p = head.withUnsafeBytes { AccessUnitJoiner.Packet(pts: pts, size: size, arrivalNs: now, head: $0, hevc: c[0] & 0x20 != 0) }
            var d = j.offer(p)
            if d == .handOver {
                d = j.offer(p)
                check(d != .handOver, "a packet handed over the frame twice")
            }
            check(j.pendingPackets <= j.framePacketLimit && j.pendingBytes <= j.frameByteLimit, "a frame past its caps")
            check((AccessUnitJoiner.shortestGapNs...AccessUnitJoiner.longestGapNs).contains(j.gap), "a gap of \(j.gap) ns")
            check(j.deadline == nil || j.isJoining, "a deadline with no frame being joined")
        }
    }

    static func resultStages(_ bytes: UnsafeBufferPointer<UInt8>) {
        let type = Array("object".utf8)
        guard let checked = type.withUnsafeBufferPointer({ try? EmittedResult.check(type: $0, json: bytes) }) else { return }
        if let b = checked.fields.bounds {
            check([b.x, b.y, b.width, b.height].allSatisfy { abs($0) <= ResultFields.maxCoordinate }, "a box past any frame let through: \(b)")
        }
        let line = checked.line(source: "s", plugin: "p", pluginIndex: 0)
        guard let result = line.result else { return }
        // The evidence's view of it: the mark drawn and the crop, fitted to frames of a few sizes.
        let mark = SnapshotRecorder.mark(result, track: 7)
        for (w, h) in [(1, 1), (7, 1), (640, 480)] {
            if let r = mark.region.fitted(width: w, height: h) {
                check(r.x >= 0 && r.y >= 0 && r.x + r.width <= max(2, w) && r.y + r.height <= max(2, h), "a region \(r) outside \(w)x\(h)")
            }
        }
        // The analytics' view: a track, a zone and a line over three frames of the same box.
        guard let detection = Detection(result) else { return }
        let analytics = ResultStages.analytics()
        for frame in 0..<3 {
            _ = analytics.update([detection], time: Double(frame) / 10, width: 640, height: 480, between: frame == 2 ? [0.15] : [])
        }
        _ = analytics.finish()
    }

    /// The first byte picks the bucket (and a delete), the bytes to the first newline are the key, the rest its value.
    static func siteEntries(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let first = bytes.first else { return }
        let rest = Array(bytes.dropFirst())
        let cut = rest.firstIndex(of: 10) ?? rest.count
        let key = String(decoding: rest[..<cut], as: UTF8.self)
        let value = Array(rest[min(rest.count, cut + 1)...])
        check(SiteEntryReading.read(bucket: Int(first & 0x7f), key: key, value: value, deleted: first & 0x80 != 0),
              "an input placed that the view does not hold, or on a node it does not hold")
    }

    static func evidenceIndex(_ bytes: UnsafeBufferPointer<UInt8>) {
        let dir = EvidenceIndexFolder.path
        for name in PathText.contents(ofFolder: dir) ?? [] { unlink(dir + "/" + name) }
        let fd = open(dir + "/" + EvidenceFolder.indexName, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        if let base = bytes.baseAddress, fd >= 0 { _ = write(fd, base, bytes.count) }
        close(fd)
        // A file the index may name, there on disk.
        let kept = open(dir + "/a.mp4", O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        close(kept)
        let budget = EvidenceSettings.Budget(maxBytes: 1 << 20, maxAge: 60, minFreeBytes: 0)
        guard let folder = try? EvidenceFolder(dir, kind: .clips, role: "the clips folder", setting: "--clips", budget: budget) else { return }
        let entries = folder.entries
        check(entries.allSatisfy { EvidenceFolder.isOwnName($0.name) && $0.bytes <= EvidenceFolder.maxBytes }, "an entry that is not cvhost's")
        check(folder.bytesHeld == entries.map(\.bytes).clampedSum(), "held \(folder.bytesHeld), the entries \(entries.map(\.bytes))")
        _ = folder.makeRoom(for: 1)
        _ = folder.sweep(nowNs: Int64.max)
        _ = folder.sweep(nowNs: Int64.min)
        check(folder.write("b.mp4", bytes: [1, 2]) == nil, "a file could not be written after the index was read")
        check(folder.entries.contains { $0.name == "b.mp4" }, "the file written is not in the index")
    }

    static func snapshotRegion(_ bytes: UnsafeBufferPointer<UInt8>) {
        // Four doubles (x, y, width, height, any bits), a frame's sides of 1 to 4096.
        guard bytes.count >= 36 else { return }
        let raw = UnsafeRawBufferPointer(bytes)
        let d = (0..<4).map { raw.loadUnaligned(fromByteOffset: $0 * 8, as: Double.self) }
        let w = 1 + Int(raw.loadUnaligned(fromByteOffset: 32, as: UInt16.self) % 4096)
        let h = 1 + Int(raw.loadUnaligned(fromByteOffset: 34, as: UInt16.self) % 4096)
        let region = SnapshotRecorder.region(x: d[0], y: d[1], width: d[2], height: d[3])
        guard let r = region.fitted(width: w, height: h) else { return }
        check(r.width >= 1 && r.height >= 1 && r.x >= 0 && r.y >= 0 && r.x + r.width <= w && r.y + r.height <= h,
              "\(region) fitted to \(w)x\(h) is \(r)")
        check((w < 2 || (r.width % 2 == 0 && r.x % 2 == 0)) && (h < 2 || (r.height % 2 == 0 && r.y % 2 == 0)), "odd region \(r) in \(w)x\(h)")
    }

    static func mjpegFrame(_ bytes: UnsafeBufferPointer<UInt8>) {
        // The seeds are 64x48 frames: a frame of another size must be refused, not misread.
        guard case .frame(let buffer) = MJPEGFrames.decoder.decode(UnsafeRawBufferPointer(bytes)) else { return }
        check(buffer.width == 64 && buffer.height == 48, "a \(buffer.width)x\(buffer.height) frame from a 64x48 camera")
    }
}

/// The analytics the result-stages target feeds: a track, a zone and a line (a new one each input).
private enum ResultStages {
    static func analytics() -> BoxAnalytics {
        BoxAnalytics(tracker: TrackerSettings(), zones: [try! AnalyticsSpec.zone("z=100,100 500,100 500,400 100,400")],
                     lines: [try! AnalyticsSpec.line("l=320,0 320,480")])
    }
}

/// The evidence-index target's folder (0700, in memory), emptied for each input.
private enum EvidenceIndexFolder {
    static let path: String = {
        let p = "/dev/shm/cvhost-fuzz-evidence-\(getpid())"
        mkdir(p, 0o700)
        return p
    }()
}

/// One decoder for every input, as a camera has one for all its frames.
private enum MJPEGFrames {
    nonisolated(unsafe) static let decoder = try! MJPEGDecoder(width: 64, height: 48, device: "fuzz")
}

/// Commands of a run without inputs, their answers written to /dev/null.
private enum Commands {
    static let shared: LiveCommands = {
        let null = open("/dev/null", O_WRONLY | O_CLOEXEC)
        let router = try! OutputRouter(destinations: [.stdout], stdoutDescriptor: null, connectTimeout: 1, onStdoutClosed: {})
        return LiveCommands(output: router)
    }()
}

/// The barcode plugin's info: the plugin with the most kinds of option (numbers with ranges,
/// choices, lists). Looked up as cvhost looks it up, and beside the package's debug build.
private enum BarcodePluginInfo {
    static let shared: PluginInfo = {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
        let loader = PluginLoader(searchPath: PluginLoader.defaultSearchPath() + [root + "/.build/debug"])
        do {
            return try loader.find("barcode", isPath: false)
        } catch {
            fatalError("the plugin-options target needs the barcode plugin: run swift build first (\(error))")
        }
    }()
}

/// A file whose content is the input, for the readers that take a path: one file in memory
/// (/dev/shm) per target, rewritten for each input (the regression tests run targets side by side).
final class InputFile: @unchecked Sendable {
    // @unchecked Sendable: a target is called on one thread at a time.
    static let pluginFile = InputFile("plugin-file")
    static let configFile = InputFile("config-file")
    private let path: String
    private let fd: Int32

    private init(_ target: String) {
        path = "/dev/shm/cvhost-fuzz-\(target)-\(getpid())"
        fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        precondition(fd >= 0, "cannot make \(path): \(String(cString: strerror(errno)))")
        unlink(path)  // the name goes; /proc/self/fd/N names the file while it is open
    }

    func holding(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        _ = ftruncate(fd, 0)
        var written = 0
        while written < bytes.count {
            let n = pwrite(fd, bytes.baseAddress! + written, bytes.count - written, off_t(written))
            if n <= 0 { break }
            written += n
        }
        return "/proc/self/fd/\(fd)"
    }
}
