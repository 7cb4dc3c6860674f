import CVHostCore
import CVHostLines
import CVHostTestSupport
import Foundation
import Testing
@testable import CVHostEvidence

/// The evidence room as a runner's stage: each frame's results come with their frame (and the
/// frames passed over before it), and an event's snapshot is of the frame its line names.
@Suite("Snapshots of the frame each event came with")
struct SnapshotTests {
    static func sample(_ sequence: UInt64, luma: UInt8) -> SampleBuffer {
        let pixels = PixelBuffer.allocate(format: .gray8, width: 64, height: 48, colorimetry: .jpeg) { planes, strides in
            for row in 0..<48 { (planes[0] + row * strides[0]).initializeMemory(as: UInt8.self, repeating: luma, count: 64) }
        }
        return SampleBuffer(sequence: sequence, captureTimeNs: Int64(sequence), monotonicCaptureNs: sequence, presentationTimeNs: Int64(sequence) * 1000,
                            pixelBuffer: pixels)
    }

    static func frame(_ sequence: UInt64, keepPicture: Bool = true) -> ProcessedFrame {
        ProcessedFrame(sample(sequence, luma: UInt8(sequence * 20)), width: 64, height: 48, keepPicture: keepPicture)
    }

    static func event(_ kind: String, seq: UInt64) -> OutputLine {
        JSONObject.envelope(event: kind, source: "cam", plugin: "walker", pluginIndex: 0, seq: seq, tsNs: 0, ptsNs: Int64(seq) * 1000).line()
    }

    static func snapshot(_ line: OutputLine) -> String? {
        let json = try? JSONSerialization.jsonObject(with: Data(line.bytes)) as? [String: Any]
        return json?["snapshot"] as? String
    }

    @Test("an event of the frame processed and one of a frame passed over each get a snapshot of their own frame; one whose frame came without its picture gets the nearest kept (snapshot_frame); an event not asked for, none; no frame kept at all: none, counted as no_frame")
    func ownFrames() throws {
        let dir = TestFolders.make("snapshots-unit")
        let settings = try EvidenceSettings(parsing: dir + ":on=line.crossed+zone.entered", kind: .snapshots)
        let evidence = try Evidence(snapshots: settings, clips: nil, defaultEvents: [])
        #expect(evidence.needsPassedOverPictures)
        var results = FrameResults(frame: Self.frame(6), passedOver: [Self.frame(3, keepPicture: false), Self.frame(4)],
                                   lines: [Self.event("line.crossed", seq: 4), Self.event("zone.entered", seq: 6),
                                           Self.event("zone.entered", seq: 3), Self.event("zone.exited", seq: 6)])
        evidence.frame(&results)
        let paths = results.lines.map(Self.snapshot)
        #expect(paths[0]?.contains("cam-4-line_crossed") == true, "\(paths)")
        #expect(paths[1]?.contains("cam-6-zone_entered") == true, "\(paths)")
        #expect(paths[2]?.contains("cam-4-zone_entered") == true && paths[3] == nil, "\(paths)")
        let nearest = try JSONSerialization.jsonObject(with: Data(results.lines[2].bytes)) as? [String: Any]
        #expect(nearest?["snapshot_frame"] as? Int == 4 && results.lines[0].bytes.contains(Array("snapshot_frame".utf8)) == false)
        var bare = FrameResults(frame: Self.frame(9, keepPicture: false), passedOver: [Self.frame(8, keepPicture: false)],
                                lines: [Self.event("line.crossed", seq: 8)])
        evidence.frame(&bare)
        #expect(Self.snapshot(bare.lines[0]) == nil && evidence.statistics.snapshotsDropped == ["no_frame": 1])
        evidence.finishInput("cam")
        // Each file is there, of its own frame (the luma of frame N is 20 N).
        for (path, luma) in [(paths[0]!, 80), (paths[1]!, 120)] {
            let raw = dir + "/decoded.gray"
            #expect(try Tool.run("ffmpeg", ["-v", "error", "-y", "-i", path, "-f", "rawvideo", "-pix_fmt", "gray", raw]).status == 0)
            let gray = try Data(contentsOf: URL(fileURLWithPath: raw))
            let mean = gray.reduce(0) { $0 + Int($1) } / max(1, gray.count)
            #expect(abs(mean - luma) <= 4, "\(path): mean \(mean), frame's \(luma)")
        }
        evidence.finish()
    }
}
