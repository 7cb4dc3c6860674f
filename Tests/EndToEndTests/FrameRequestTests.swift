import CVHostTestSupport
import Foundation
import Testing

/// Frames at the plugin's own size (ABI 2.2's host->request_frames, Python's self.request_frames):
/// scaled by the host in one pass, letterboxed or stretched, in the format asked for, with where
/// the picture lies in them; asked for only in create(), the same by every instance.
@Suite("Frames at the plugin's size")
struct FrameRequestTests {
    static let folder = TestFolders.make("frame-request")
    static let rgb24 = "0x33424752", gray8 = 0x5945_5247

    static func plugin(_ name: String, request: String, flags: String? = nil) throws -> String {
        try PluginFixtures.build(name: name, defines: ["REQUEST_FRAMES=\(request)"] + (flags.map { ["REQUEST_FLAGS=\($0)"] } ?? []), in: folder)
    }

    /// The "frame" results of a run on a 160x120 test pattern.
    static func frames(_ spec: String, _ extra: [String] = [], environment: [String: String] = [:]) throws -> (CommandResult, [[String: Any]]) {
        let r = try CVHostBinary.run(["run", "--plugin", spec, "--input", "testsrc:160x120:unpaced", "--max-frames", "3", "--metrics-interval", "0"] + extra,
                                     timeout: 60, environment: ["CVHOST_PYTHON": "/usr/bin/python3"].merging(environment) { $1 })
        return (r, r.events("result").compactMap { $0["data"] as? [String: Any] })
    }

    @Test("a C plugin's request, in cvhost's process and in a worker: the size and format asked for, the picture letterboxed or stretched, where it lies; turned before it is scaled")
    func cPlugin() throws {
        let letterbox = try Self.plugin("letterbox", request: "64,64,CVHOST_RESIZE_LETTERBOX,114,\(Self.rgb24)")
        let stretch = try Self.plugin("stretch", request: "32,32,CVHOST_RESIZE_STRETCH,0,0")
        for isolation in ["none", "process"] {
            // 160x120 into 64x64: scaled by 0.4 to 64x48, 8 rows of grey 114 above and below.
            let (r1, boxed) = try Self.frames("\(letterbox):isolation=\(isolation)")
            #expect(r1.exitCode == 0 && boxed.count == 3, "\(r1.stderr)")
            // What it asked for is in session.started, and the lines pass the schema.
            let started = (r1.events("session.started").first?["plugins"] as? [[String: Any]])?.first
            #expect(started?["frames"] as? NSDictionary == ["width": 64, "height": 64, "resize": "letterbox", "pad": 114, "pixel_formats": ["rgb24"],
                                                             "full_frame": false, "motion_regions": false],
                    "\(started ?? [:])")
            #expect(try CVHostBinary.schemaProblems(r1.stdout) == nil)
            for f in boxed {
                #expect(f["width"] as? Int == 64 && f["height"] as? Int == 64 && f["format"] as? Int == 0x3342_4752, "\(f)")
                #expect(f["source"] as? [Int] == [160, 120] && f["content"] as? [Int] == [0, 8, 64, 48], "\(f)")
                #expect(f["first"] as? Int == 114 && f["middle"] as? Int != 114, "\(f)")
                #expect(f["again"] as? Int == -Int(EPERM), "request_frames outside create(): \(f)")
            }
            // Turned a quarter first: 120x160 into 64x64 is 48x64, 8 columns of pad each side.
            let (r2, turned) = try Self.frames("\(letterbox):isolation=\(isolation),rotate=90")
            #expect(r2.exitCode == 0 && turned.first?["source"] as? [Int] == [120, 160] && turned.first?["content"] as? [Int] == [8, 0, 48, 64],
                    "\(r2.stderr) \(turned)")
            // Format 0: the host's choice among the plugin's (GRAY8 first); the whole frame is the picture.
            let (r3, stretched) = try Self.frames("\(stretch):isolation=\(isolation)")
            #expect(r3.exitCode == 0, "\(r3.stderr)")
            #expect(stretched.first?["width"] as? Int == 32 && stretched.first?["height"] as? Int == 32 && stretched.first?["format"] as? Int == Self.gray8)
            #expect(stretched.first?["content"] as? [Int] == [0, 0, 32, 32] && stretched.first?["source"] as? [Int] == [160, 120], "\(stretched)")
        }
    }

    @Test("ABI 2.4: a C plugin that asks for motion regions, gated on motion: each frame where two squares move comes with two regions around them (squares of 64 or more) and the captured picture, the same in and out of process; frames that do not move are not given; not gated, no regions")
    func motionRegions() throws {
        let plugin = try Self.plugin("regions", request: "64,64,CVHOST_RESIZE_LETTERBOX,114,\(Self.rgb24)", flags: "CVHOST_FRAME_REQUEST_MOTION_REGIONS")
        let clip = try MotionRegionsTests.twoSquares()
        var seen: [String: [[Int]]] = [:]
        for isolation in ["none", "process"] {
            let r = try CVHostBinary.run(["run", "--plugin", "\(plugin):isolation=\(isolation),on_motion=true,motion_refresh=0", "--input", clip,
                                          "--metrics-interval", "0"], timeout: 60)
            #expect(r.exitCode == 0, "\(r.stderr)")
            let started = (r.events("session.started").first?["plugins"] as? [[String: Any]])?.first?["frames"] as? [String: Any]
            #expect(started?["motion_regions"] as? Bool == true, "\(started ?? [:])")
            let frames = r.events("result")
            #expect(frames.compactMap { $0["seq"] as? Int } == Array(10...29), "\(frames.compactMap { $0["seq"] as? Int })")
            for e in frames {
                let f = e["data"] as? [String: Any] ?? [:]
                let regions = f["regions"] as? [[Int]] ?? []
                // Squares of 64 at least (as large as the motion box where it is larger: the square and its trail).
                #expect(regions.count == 2 && regions.allSatisfy { $0[2] >= 64 && $0[2] == $0[3] }, "\(f)")
                let t = Double(e["seq"] as? Int ?? 0) / 10
                for (cx, cy) in [(130 + (t - 1) * 100, 130.0), (930 + (t - 1) * 100, 530.0)] {
                    #expect(regions.contains { Double($0[0]) < cx && cx < Double($0[0] + $0[2]) && Double($0[1]) < cy && cy < Double($0[1] + $0[3]) },
                            "\(f): no region around the square at (\(cx), \(cy))")
                }
                #expect(f["full"] as? [Int] == [1280, 720, 0x3342_4752], "\(f)")
                seen[isolation, default: []] += regions
            }
            #expect(try CVHostBinary.schemaProblems(r.stdout) == nil)
        }
        #expect(seen["none"] == seen["process"])
        let ungated = try CVHostBinary.run(["run", "--plugin", plugin, "--input", clip, "--motion", "on", "--metrics-interval", "0"], timeout: 60)
        #expect(ungated.events("result").count == 30 && ungated.events("result").allSatisfy { ($0["data"] as? [String: Any])?["regions"] == nil })
    }

    @Test("ABI 2.3: a C plugin that asks for the full frame too gets the captured picture beside the scaled one, in its format, in and out of process")
    func fullFrame() throws {
        let both = try Self.plugin("both", request: "64,64,CVHOST_RESIZE_LETTERBOX,114,\(Self.rgb24)", flags: "CVHOST_FRAME_REQUEST_FULL_FRAME")
        // What the host makes of the same frames at their own size in RGB (frame-probe-plugin's dump).
        let probe = try PluginFixtures.build(name: "probe-rgb", defines: ["PROBE_FORMAT=CVHOST_PIXEL_FORMAT_RGB24"],
                                             source: PluginFixtures.packageRoot + "/Tests/Fixtures/frame-probe-plugin.c", in: Self.folder)
        let expected = Self.folder + "/probe.rgb"
        let (probed, _) = try Self.frames("\(probe):dump=\(expected)")
        #expect(probed.exitCode == 0, "\(probed.stderr)")
        for isolation in ["none", "process"] {
            let dump = Self.folder + "/full-\(isolation).rgb"
            let (r, frames) = try Self.frames("\(both):isolation=\(isolation)", environment: ["DUMP_FULL": dump])
            #expect(r.exitCode == 0 && frames.count == 3, "\(r.stderr)")
            let started = (r.events("session.started").first?["plugins"] as? [[String: Any]])?.first?["frames"] as? [String: Any]
            #expect(started?["full_frame"] as? Bool == true, "\(started ?? [:])")
            #expect(try CVHostBinary.schemaProblems(r.stdout) == nil)
            for f in frames {
                #expect(f["width"] as? Int == 64 && f["content"] as? [Int] == [0, 8, 64, 48], "\(f)")
                #expect(f["full"] as? [Int] == [160, 120, 0x3342_4752] && f["full_has_full"] as? Bool == false, "\(f)")
                #expect(f["full_source"] as? [Int] == [160, 120] && f["full_content"] as? [Int] == [0, 0, 160, 120], "\(f)")
            }
            let mine = try Data(contentsOf: URL(fileURLWithPath: dump)), theirs = try Data(contentsOf: URL(fileURLWithPath: expected))
            #expect(mine.count == 160 * 120 * 3 && mine == theirs, "\(isolation): the full frame is the captured one in RGB")
        }
        // Without the flag (a 2.2 plugin's request): no full frame.
        let (r, frames) = try Self.frames(try Self.plugin("noflag", request: "64,64,CVHOST_RESIZE_LETTERBOX,114,\(Self.rgb24)", flags: "0"))
        #expect(r.exitCode == 0 && frames.count == 3 && frames.allSatisfy { $0["full"] == nil }, "\(frames)")
    }

    @Test("a request cvhost cannot make is refused in create(): a format the plugin did not declare, a size out of range, a flag it does not know")
    func refused() throws {
        for (name, request, flags) in [("undeclared", "64,64,CVHOST_RESIZE_STRETCH,0,0x33524742", "0"), ("tiny", "8,64,CVHOST_RESIZE_STRETCH,0,0", "0"),
                                       ("noresize", "64,64,7,0,0", "0"), ("unknownflag", "64,64,CVHOST_RESIZE_STRETCH,0,0", "4")] {
            let path = try Self.plugin(name, request: request, flags: flags)
            let (r, _) = try Self.frames(path)
            #expect(r.exitCode == 16 && r.stderr.contains("request_frames returned -22"), "\(name): \(r.stderr)")
        }
    }

    @Test("a Python plugin's request in __init__: frames of its size, where the picture lies; outside __init__ it raises")
    func python() throws {
        let path = Self.folder + "/sized.py"
        try """
            import cvhost

            class Sized(cvhost.Plugin):
                api_version = (1, 1)
                name = "sized"
                pixel_formats = ("gray8", "bgr24")
                stateless = True

                def __init__(self, options):
                    self.request_frames(100, 100, "letterbox", 7, "bgr24")

                def process(self, frame):
                    try:
                        self.request_frames(10, 10)
                        again = "taken"
                    except RuntimeError as e:
                        again = str(e)
                    a = frame.array()
                    self.emit("frame", {"shape": list(a.shape), "format": frame.format, "content": list(frame.content),
                                        "source": [frame.source_width, frame.source_height], "first": int(a[0, 0, 0]), "again": again,
                                        "full": frame.full})
            """.write(toFile: path, atomically: true, encoding: .utf8)
        let (r, frames) = try Self.frames(path + ":instances=2")
        #expect(r.exitCode == 0 && frames.count == 3, "\(r.stderr)")
        // 160x120 into 100x100: 100x75 (gain 0.625), 12 rows above (round(12.5 - 0.1)), 13 below.
        for f in frames {
            #expect(f["shape"] as? [Int] == [100, 100, 3] && f["format"] as? String == "bgr24" && f["content"] as? [Int] == [0, 12, 100, 75], "\(f)")
            #expect(f["source"] as? [Int] == [160, 120] && f["first"] as? Int == 7, "\(f)")
            #expect((f["again"] as? String)?.contains("only in __init__") == true, "\(f)")
            #expect(f["full"] is NSNull, "\(f)")
        }
    }

    @Test("API 1.2: a Python plugin that asks for the full frame too reads it as frame.full: the captured picture, in its format")
    func pythonFullFrame() throws {
        let path = Self.folder + "/both.py"
        try """
            import cvhost

            class Both(cvhost.Plugin):
                api_version = (1, 2)
                name = "both"
                pixel_formats = ("bgr24",)

                def __init__(self, options):
                    self.request_frames(64, 64, "stretch", 0, "bgr24", full=True)

                def process(self, frame):
                    small, full = frame.array(), frame.full.array()
                    self.emit("frame", {"shape": list(small.shape), "full": list(full.shape), "full_format": frame.full.format,
                                        "full_content": list(frame.full.content), "nested": frame.full.full is None,
                                        "means": [float(small.mean()), float(full.mean())]})
            """.write(toFile: path, atomically: true, encoding: .utf8)
        let (r, frames) = try Self.frames(path)
        #expect(r.exitCode == 0 && frames.count == 3, "\(r.stderr)")
        for f in frames {
            #expect(f["shape"] as? [Int] == [64, 64, 3] && f["full"] as? [Int] == [120, 160, 3] && f["full_format"] as? String == "bgr24", "\(f)")
            #expect(f["full_content"] as? [Int] == [0, 0, 160, 120] && f["nested"] as? Bool == true, "\(f)")
            // The same picture at two sizes (stretched, no padding): the same mean colour, near enough.
            let means = f["means"] as? [Double] ?? []
            #expect(means.count == 2 && abs(means[0] - means[1]) < 3, "\(f)")
        }
    }
}
