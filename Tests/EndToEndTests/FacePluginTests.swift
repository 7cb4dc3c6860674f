import CVHostTestSupport
import Foundation
import Testing

/// The face plugin on the corpus's real photos and video (../shared/corpus; skipped without it).
@Suite("face plugin", .enabled(if: Corpus.isPresent, "needs ../shared/corpus"))
struct FacePluginTests {
    static func run(_ plugin: String, _ input: String, _ extra: [String] = [], sourceLocation: SourceLocation = #_sourceLocation)
        throws -> CommandResult
    {
        let r = try CVHostBinary.run(["run", "--plugin", plugin, "--input", input, "-q", "--metrics-interval", "0"] + extra, timeout: 300)
        #expect(r.exitCode == 0, "\(r.stderr)", sourceLocation: sourceLocation)
        let problems = try CVHostBinary.schemaProblems(r.stdout)
        #expect(problems == nil, "\(problems ?? "")", sourceLocation: sourceLocation)
        return r
    }

    static func iou(_ a: [Double], _ b: [Double]) -> Double {
        let w = max(0, min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0]))
        let h = max(0, min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1]))
        return w * h / (a[2] * a[3] + b[2] * b[3] - w * h)
    }

    static func box(_ e: [String: Any]) -> [Double] {
        let b = (e["data"] as? [String: Any])?["bounds"] as? [String: Double] ?? [:]
        return [b["x"] ?? 0, b["y"] ?? 0, b["width"] ?? 0, b["height"] ?? 0]
    }

    @Test("faceID stays the same for each person across the frames of faces_1280x720.mp4")
    func stableFaceIDs() throws {
        let video = Corpus.path("video/faces_1280x720.mp4")
        // Ground truth: frame, source (the person), face_box [x, y, w, h].
        var truth: [Int: [(String, [Double])]] = [:]
        let csv = try String(contentsOfFile: Corpus.path("video/faces_1280x720_gt.csv"), encoding: .utf8)
        for line in csv.split(whereSeparator: \.isNewline).dropFirst() {
            let parts = line.split(separator: ",", maxSplits: 2)
            guard parts.count == 3, let frame = Int(parts[0]) else { continue }
            let numbers = parts[2].split(whereSeparator: { !"0123456789.".contains($0) }).prefix(4).compactMap { Double($0) }
            if numbers.count == 4 { truth[frame, default: []].append((String(parts[1]), numbers)) }
        }
        let r = try FacePluginTests.run("face", video)
        var ids: [String: [Int]] = [:]
        for e in r.events("result") where e["type"] as? String == "face" {
            let seq = e["seq"] as? Int ?? -1
            for (person, box) in truth[seq] ?? [] where FacePluginTests.iou(FacePluginTests.box(e), box) >= 0.3 {
                ids[person, default: []].append((e["data"] as? [String: Any])?["face_id"] as? Int ?? -1)
            }
        }
        #expect(ids.count == 6)
        for (person, seen) in ids {
            #expect(seen.count >= 85, "\(person) found in \(seen.count) of 90 frames")
            #expect(Set(seen).count == 1, "\(person) had face ids \(Set(seen).sorted())")
        }
        // Each face id ends with exactly one face.lost.
        let faceIDs = Set(r.events("result").filter { $0["type"] as? String == "face" }
            .compactMap { ($0["data"] as? [String: Any])?["face_id"] as? Int })
        let lost = r.events("result").filter { $0["type"] as? String == "face.lost" }
            .compactMap { ($0["data"] as? [String: Any])?["face_id"] as? Int }
        #expect(Set(lost) == faceIDs && lost.count == faceIDs.count)
    }

    @Test("parallel instances give the same faces, ids and order as one")
    func parallelInstances() throws {
        let video = Corpus.path("video/faces_1280x720.mp4")
        func results(_ plugin: String) throws -> [String] {
            try FacePluginTests.run(plugin, video, ["--max-frames", "40"]).comparableResults
        }
        let one = try results("face")
        #expect(one.count > 200)
        #expect(try results("face:instances=2") == one)
    }

    @Test("roll follows the head's tilt; frontal faces have yaw 0")
    func angles() throws {
        let photo = Corpus.path("faces/images/1280x720/face_1280x720_astronaut.jpg")
        var roll: [Int: Double] = [:]
        for degrees in [0, 12, -12] {
            let image = MediaFixtures.folder + "/astronaut-rotated\(degrees).png"
            _ = try MediaFixtures.make("astronaut-rotated\(degrees).png", ["-i", photo, "-vf", "rotate=\(degrees)*PI/180:fillcolor=gray"])
            let r = try FacePluginTests.run("face", image)
            let d = try #require(r.events("result").first { $0["type"] as? String == "face" }?["data"] as? [String: Any])
            #expect(d["has_yaw"] as? Bool == true && d["yaw_angle"] as? Int == 0 && d["detector"] as? String == "frontal")
            #expect(d["has_roll"] as? Bool == true)
            roll[degrees] = d["roll_angle"] as? Double
        }
        let upright = try #require(roll[0])
        // FFmpeg's rotate turns clockwise for positive angles; roll is positive clockwise.
        #expect((6.0...18.0).contains((roll[12] ?? 0) - upright), "roll \(roll)")
        #expect((-18.0 ... -6.0).contains((roll[-12] ?? 0) - upright), "roll \(roll)")
    }

    @Test("report=changes: each face once, when it appears, then face.lost")
    func reportChanges() throws {
        let r = try FacePluginTests.run("face:report=changes", Corpus.path("video/faces_1280x720.mp4"), ["--max-frames", "30"])
        let faces = r.events("result").filter { $0["type"] as? String == "face" }.compactMap { $0["data"] as? [String: Any] }
        let ids = faces.compactMap { $0["face_id"] as? Int }
        #expect(ids.count == Set(ids).count && ids.count >= 6, "\(ids)")
        #expect(faces.allSatisfy { $0["new"] as? Bool == true })
        #expect(r.events("result").filter { $0["type"] as? String == "face.lost" }.count == ids.count)
    }

    @Test("still images are searched whole, each with its own face ids")
    func stills() throws {
        let dir = PluginFixtures.makeFolder()
        let photo = Corpus.path("faces/images/1280x720/face_1280x720_astronaut.jpg")
        for name in ["a.jpg", "b.jpg", "c.jpg"] { try FileManager.default.copyItem(atPath: photo, toPath: dir + "/" + name) }
        let r = try FacePluginTests.run("face:full_every=10", dir)
        let faces = r.events("result").filter { $0["type"] as? String == "face" }
        #expect(faces.compactMap { $0["image"] as? String } == ["a.jpg", "b.jpg", "c.jpg"].map { dir + "/" + $0 })
        let ids = faces.compactMap { ($0["data"] as? [String: Any])?["face_id"] as? Int }
        #expect(Set(ids).count == 3, "the same face in three pictures is three faces: \(ids)")
        #expect(r.events("result").filter { $0["type"] as? String == "face.lost" }.count == 3)
    }

    @Test("refusals: missing cascades, a bad region")
    func refusals() throws {
        let photo = Corpus.path("sources/messi5.jpg")
        let missing = try CVHostBinary.run(["run", "--plugin", "face:cascades=/nonexistent", "--input", photo])
        #expect(missing.exitCode == 16 && missing.stderr.contains("/nonexistent/haarcascade_frontalface_default.xml"), "\(missing.stderr)")
        let roi = try CVHostBinary.run(["run", "--plugin", "face:roi=0.5:0.5:0.8:0.8", "--input", photo])
        #expect(roi.exitCode == 16 && roi.stderr.contains("roi="))
    }
}
