import CFFmpeg
import CVHostCore
import CVHostTestSupport
import Foundation
import Glibc
import Testing
@testable import CVHostEvidence

/// The clips of one input (ClipRecorder), fed the packets of a real H.264 file (libx264, a keyframe
/// every second) as a file input reads them: where a clip starts and ends, events sharing one, an
/// event before any keyframe, the longest clip. No run, no decoder.
@Suite("Clips of an input's packets")
struct ClipRecorderTests {
    /// 4 s at 30 fps, a keyframe every 30 frames (0, 1, 2, 3 s), no B-frames.
    static func packets() throws -> [EncodedPacket] {
        let path = try MediaFixtures.make("gop30.mp4", MediaFixtures.pattern + ["-frames:v", "120", "-c:v", "libx264", "-g", "30",
                                                                                "-keyint_min", "30", "-sc_threshold", "0", "-bf", "0", "-pix_fmt", "yuv420p"])
        var context: UnsafeMutablePointer<AVFormatContext>?
        guard avformat_open_input(&context, path, nil, nil) == 0, let context else { throw Failure("cannot open \(path)") }
        defer {
            var owned: UnsafeMutablePointer<AVFormatContext>? = context
            avformat_close_input(&owned)
        }
        guard avformat_find_stream_info(context, nil) >= 0, let stream = context.pointee.streams[0] else { throw Failure("no stream in \(path)") }
        let timeBase = stream.pointee.time_base
        guard let format = EncodedStreamFormat(copying: stream.pointee.codecpar, timeBase: timeBase) else { throw Failure("no format") }
        var out: [EncodedPacket] = []
        guard let packet = av_packet_alloc() else { throw Failure("no packet") }
        defer {
            var owned: UnsafeMutablePointer<AVPacket>? = packet
            av_packet_free(&owned)
        }
        while av_read_frame(context, packet) >= 0 {
            let ptsNs = av_rescale_q(packet.pointee.pts, timeBase, AVRational(num: 1, den: 1_000_000_000))
            if let p = EncodedPacket(referencing: packet, ptsNs: ptsNs, format: format) { out.append(p) }
            av_packet_unref(packet)
        }
        return out
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ d: String) { description = d }
    }

    /// A recorder whose clips go to a folder of their own; what it says of each is kept.
    static func recorder(_ options: String) throws -> (ClipRecorder, Locked<[ClipOutcome]>, String) {
        let dir = TestFolders.make("clip-recorder")
        let settings = try EvidenceSettings(parsing: dir + ":" + options + ",min_free_gb=0", kind: .clips)
        let folder = try EvidenceFolder(dir, kind: .clips, role: "the clips folder", setting: "--clips", budget: settings.budget)
        let said = Locked<[ClipOutcome]>([])
        return (ClipRecorder(source: "cam", settings: settings, folder: folder) { o in said.withLock { $0.append(o) } }, said, dir)
    }

    static func saved(_ said: Locked<[ClipOutcome]>) -> [ClipOutcome.Saved] {
        said.withLock { $0 }.compactMap { if case .saved(let s) = $0 { s } else { nil } }
    }

    static func ns(_ seconds: Double) -> Int64 { Int64(seconds * 1e9) }

    @Test("an event at 1.5 s with pre=1, post=1: the clip starts at the keyframe at or before 0.5 s (0 s) and ends by 2.5 s; a second event at 2 s extends it, one clip for both; the file is a clip of those frames")
    func window() throws {
        let packets = try Self.packets()
        #expect(packets.count == 120 && packets.filter(\.isKeyframe).map(\.ptsNs) == [0, 1, 2, 3].map { Self.ns(Double($0)) })
        let (recorder, said, dir) = try Self.recorder("pre=1,post=1,max=60")
        for p in packets {
            recorder.encodedPacket(p)
            if p.ptsNs == Self.ns(1.5) { recorder.event(id: "e1", kind: "line.crossed", label: "person", ptsNs: p.ptsNs) }
            if p.ptsNs == Self.ns(2) { recorder.event(id: "e2", kind: "zone.entered", label: "person", ptsNs: p.ptsNs) }
        }
        recorder.encodedStreamEnded()
        recorder.drain()
        let clips = Self.saved(said)
        #expect(clips.count == 1, "\(said.withLock { $0 })")
        let clip = try #require(clips.first)
        #expect(clip.events == ["e1", "e2"] && clip.startNs == 0, "\(clip)")
        // The frames up to 3 s (2 s + post), not past it: 91 packets (0 to 3 s inclusive).
        #expect(clip.endNs == Self.ns(3) && clip.packets == 91, "\(clip)")
        #expect(FileManager.default.fileExists(atPath: dir + "/" + clip.file) && clip.bytes > 0)
        let probe = try Tool.run("ffprobe", ["-v", "error", "-count_packets", "-select_streams", "v:0", "-show_entries", "stream=nb_read_packets",
                                             "-of", "csv=p=0", dir + "/" + clip.file])
        #expect(probe.output.trimmingCharacters(in: .whitespacesAndNewlines) == "91", "\(probe.output)")
    }

    @Test("an event before any keyframe was read waits for the first one within its post: the clip starts there")
    func beforeAnyKeyframe() throws {
        let packets = try Self.packets()
        let (recorder, said, _) = try Self.recorder("pre=1,post=1,max=60")
        // From 0.2 s on: the stream's first keyframe was missed (a camera joined mid-GOP).
        for p in packets where p.ptsNs >= Self.ns(0.2) {
            recorder.encodedPacket(p)
            if p.ptsNs == Self.ns(0.3) { recorder.event(id: "early", kind: "line.crossed", label: "car", ptsNs: p.ptsNs) }
        }
        recorder.drain()
        let clip = try #require(Self.saved(said).first, "\(said.withLock { $0 })")
        #expect(clip.startNs == Self.ns(1) && clip.events == ["early"], "\(clip)")
    }

    @Test("events that keep coming end their clip at max seconds after its start; the next event starts another, at its keyframe; each event in one clip")
    func longest() throws {
        let packets = try Self.packets()
        let (recorder, said, _) = try Self.recorder("pre=0,post=1,max=1.5")
        for p in packets {
            recorder.encodedPacket(p)
            // An event every 0.1 s.
            if p.ptsNs % Self.ns(0.1) < 1000 || Self.ns(0.1) - p.ptsNs % Self.ns(0.1) < 1000 {
                recorder.event(id: "\(p.ptsNs)", kind: "result", label: "x", ptsNs: p.ptsNs)
            }
        }
        recorder.drain()
        let clips = Self.saved(said)
        #expect(clips.count >= 2, "\(said.withLock { $0 })")
        #expect(clips.allSatisfy { $0.endNs - $0.startNs <= Self.ns(1.5) }, "\(clips.map { ($0.startNs, $0.endNs) })")
        #expect(clips.first?.startNs == 0 && clips.allSatisfy { $0.startNs % Self.ns(1) == 0 }, "\(clips.map { ($0.startNs, $0.endNs) })")
        let events = clips.flatMap(\.events)
        #expect(Set(events).count == events.count && events.count >= 30, "\(events)")
    }
}
