import CVHostTestSupport
import Foundation
import Testing

/// Motion regions (ABI 2.4, `frame.regions`): the detect plugin gated on motion (`on_motion=true`)
/// runs its model on the squares of a 1280x720 picture where things move, not on the whole picture
/// shrunk to its input.
@Suite("Detection on motion regions")
struct MotionRegionsTests {
    static let folder = TestFolders.make("regions")

    /// 3 s at 10 fps of grey 1280x720; from 1 s, two white 60x60 squares move right at 100 px/s,
    /// one from (100, 100), one from (900, 500).
    static func twoSquares() throws -> String {
        try MediaFixtures.make("two-squares.mp4", [
            "-f", "lavfi", "-i", "color=c=gray:s=1280x720:r=10:d=3", "-f", "lavfi", "-i", "color=c=white:s=60x60:r=10",
            "-f", "lavfi", "-i", "color=c=white:s=60x60:r=10", "-filter_complex",
            "[0][1]overlay=x='if(gte(t,1),100+(t-1)*100,-100)':y=100:shortest=1[a];[a][2]overlay=x='if(gte(t,1),900+(t-1)*100,-100)':y=500:shortest=1",
            "-c:v", "libx264", "-pix_fmt", "yuv420p"])
    }

    /// The same with two 240x180 copies of a corpus photo of a person in place of the squares, 60 px/s.
    static func twoFaces() throws -> String {
        let photo = Corpus.path("faces/images/640x480/face_640x480_astronaut.jpg")
        return try MediaFixtures.make("two-faces.mp4", [
            "-f", "lavfi", "-i", "color=c=gray:s=1280x720:r=10:d=3", "-loop", "1", "-i", photo, "-filter_complex",
            "[1]scale=240:180,split[p][q];[0][p]overlay=x='if(gte(t,1),60+(t-1)*60,-300)':y=60:shortest=1[a];[a][q]overlay=x='if(gte(t,1),900+(t-1)*60,-300)':y=480:shortest=1",
            "-frames:v", "30", "-c:v", "libx264", "-pix_fmt", "yuv420p"])
    }

    struct Object: Equatable {
        let label: String, confidence: Double, box: [Double]
    }

    static func objects(_ r: CommandResult) -> [Int: [Object]] {
        var by: [Int: [Object]] = [:]
        for e in r.events("result") {
            guard let seq = e["seq"] as? Int, let d = e["data"] as? [String: Any], let b = d["bounds"] as? [String: Double] else { continue }
            by[seq, default: []].append(Object(label: d["label"] as? String ?? "", confidence: d["confidence"] as? Double ?? -1,
                                               box: [b["x"]!, b["y"]!, b["width"]!, b["height"]!]))
        }
        return by
    }

    static func detect(_ model: String, _ input: String, gated: Bool) throws -> CommandResult {
        try CVHostBinary.run(["run", "--plugin", "detect:model=\(model),runtime=onnxruntime" + (gated ? ",on_motion=true,motion_refresh=0" : ""),
                              "--input", input, "-q"], timeout: 180, environment: DetectPluginTests.python)
    }

    @Test("a model whose boxes are constants in its 320x320 input: gated, each moving frame gives them twice, moved by the corners of two 320x320 squares around the two moving squares; not gated, once, scaled from the whole frame")
    func mapped() throws {
        let clip = try Self.twoSquares(), model = DetectPluginTests.model("yolov8")
        let gated = try Self.detect(model, clip, gated: true)
        #expect(gated.exitCode == 0, "\(gated.stderr)")
        let frames = Self.objects(gated)
        // The squares move from frame 10 (t 1 s) to the last (29).
        #expect(Set(frames.keys) == Set(10...29), "\(frames.keys.sorted())")
        for (seq, found) in frames {
            // A (80, 80, 40x40 in the model's input, "cat") in each region: the region's corner is it, less 80.
            let corners = found.filter { $0.label == "cat" && $0.box[2] == 40 }.map { [$0.box[0] - 80, $0.box[1] - 80] }.sorted { $0[0] < $1[0] }
            #expect(corners.count == 2 && found.count == 6, "frame \(seq): \(found)")
            guard corners.count == 2 else { continue }
            let t = Double(seq) / 10
            for (corner, square) in zip(corners, [(100 + (t - 1) * 100, 100.0), (900 + (t - 1) * 100, 500.0)]) {
                let (cx, cy) = (square.0 + 30, square.1 + 30)
                #expect(cx > corner[0] && cx < corner[0] + 320 && cy > corner[1] && cy < corner[1] + 320,
                        "frame \(seq): the square's centre (\(cx), \(cy)) is outside the region at \(corner)")
                // Each of the region's other boxes is the model's, moved by the same corner.
                for (label, x, y, w, h) in [("dog", 82.0, 80.0, 40.0, 40.0), ("cat", 220.0, 185.0, 60.0, 30.0)] {
                    #expect(found.contains { $0.label == label && $0.box == [corner[0] + x, corner[1] + y, w, h] }, "frame \(seq): \(found)")
                }
            }
        }
        #expect(try CVHostBinary.schemaProblems(gated.stdout) == nil)
        let whole = Self.objects(try Self.detect(model, clip, gated: false))
        #expect(whole.count == 30 && whole.values.allSatisfy { $0.count == 3 }, "\(whole.count) frames")
    }

    @Test("NudeNet's YOLOv8n on two small people: on the regions it finds both faces in every moving frame, on the whole frame shrunk to 320 none; the regions of a frame run as one batch give what they give one by one (a copy of the model with its batch fixed at 1), within 1e-4 (scores written to 4 decimals: 1.5e-4)")
    func batchedRegions() throws {
        try #require(FileManager.default.fileExists(atPath: DetectPluginTests.realModel), "no NudeNet model: run scripts/install-deps.sh --tests")
        try #require(Corpus.isPresent, "../shared/corpus is missing")
        let clip = try Self.twoFaces()
        let single = Self.folder + "/320n-batch1.onnx"
        let fixed = try Tool.run(DetectPluginTests.venvPython, ["-c", """
            import onnx, sys
            m = onnx.load(sys.argv[1])
            for v in list(m.graph.input) + list(m.graph.output):
                d = v.type.tensor_type.shape.dim[0]
                d.ClearField("dim_param")
                d.dim_value = 1
            onnx.save(m, sys.argv[2])
            """, DetectPluginTests.realModel, single])
        try #require(fixed.status == 0, "\(fixed.output)")
        let batched = try Self.detect(DetectPluginTests.realModel, clip, gated: true)
        #expect(batched.exitCode == 0, "\(batched.stderr)")
        let found = Self.objects(batched)
        for seq in 10...29 {
            #expect((found[seq] ?? []).filter { $0.label.hasPrefix("FACE_") }.count == 2, "frame \(seq): \(found[seq] ?? [])")
        }
        let oneByOne = Self.objects(try Self.detect(single, clip, gated: true))
        #expect(Set(oneByOne.keys) == Set(found.keys))
        for (seq, objects) in found {
            let other = oneByOne[seq] ?? []
            #expect(objects.count == other.count, "frame \(seq)")
            for (a, b) in zip(objects, other) {
                #expect(a.label == b.label && abs(a.confidence - b.confidence) <= 1.5e-4 && zip(a.box, b.box).allSatisfy { abs($0 - $1) <= 1e-4 * 1280 },
                        "frame \(seq): \(a) against \(b)")
            }
        }
        let whole = try Self.detect(DetectPluginTests.realModel, clip, gated: false)
        #expect(whole.exitCode == 22 && whole.events("result").isEmpty, "\(whole.events("result").count) results")
    }
}
