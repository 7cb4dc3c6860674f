import CVHostAnalytics
import Testing
@testable import CVHostMotion

/// Motion from luma alone (MotionDetector), on made pictures: a textured still scene with sensor
/// noise, squares that move, a flash, a mask; the boxes in the frame's pixels.
@Suite("MotionDetector")
struct MotionDetectorTests {
    /// A 640x360 grey picture with a fixed texture, noise of ±`noise` (a camera's sensor), and
    /// white squares of `side` px at `squares` (their top left corners).
    struct Scene {
        var width = 640, height = 360
        var noise = 4
        var brightness = 0
        var squares: [(x: Int, y: Int)] = []
        var side = 40
        var seed: UInt64 = 1

        mutating func frame() -> [UInt8] {
            var pixels = [UInt8](repeating: 0, count: width * height)
            for y in 0..<height {
                for x in 0..<width {
                    // Texture: stripes and blocks a scene has, fixed from frame to frame.
                    let texture = 90 + ((x / 16 + y / 24) % 3) * 25 + (x * 7 + y * 13) % 11
                    seed = seed &* 6364136223846793005 &+ 1442695040888963407
                    let n = Int(seed >> 59) % (2 * noise + 1) - noise
                    pixels[y * width + x] = UInt8(max(0, min(255, texture + n + brightness)))
                }
            }
            for s in squares {
                for y in max(0, s.y)..<min(height, s.y + side) {
                    for x in max(0, s.x)..<min(width, s.x + side) { pixels[y * width + x] = 250 }
                }
            }
            return pixels
        }
    }

    static func detect(_ d: MotionDetector, _ scene: inout Scene) -> MotionDetector.Outcome {
        let pixels = scene.frame()
        return pixels.withUnsafeBufferPointer { d.detect(luma: $0.baseAddress!, width: scene.width, height: scene.height, stride: scene.width) }
    }

    static func contains(_ b: Box, _ x: Double, _ y: Double) -> Bool { x >= b.x && x <= b.x + b.width && y >= b.y && y <= b.y + b.height }

    @Test("a still scene with sensor noise: no motion, frame after frame")
    func still() {
        let d = MotionDetector()
        var scene = Scene()
        let boxes = (0..<40).flatMap { _ in Self.detect(d, &scene).boxes }
        #expect(boxes.isEmpty, "\(boxes.prefix(3))")
    }

    @Test("a square moving 10 px a frame: one box a frame around it, in the frame's pixels")
    func moving() {
        let d = MotionDetector()
        var scene = Scene()
        _ = Self.detect(d, &scene)
        for i in 0..<30 {
            scene.squares = [(100 + 10 * i, 150)]
            let o = Self.detect(d, &scene)
            #expect(o.boxes.count == 1, "frame \(i): \(o.boxes.map { "\(Int($0.x)),\(Int($0.y)) \(Int($0.width))x\(Int($0.height))" })")
            guard let b = o.boxes.first else { continue }
            #expect(Self.contains(b, Double(120 + 10 * i), 170), "frame \(i): \(b) misses the square's centre")
            #expect(b.width < 140 && b.height < 100, "frame \(i): \(b) is much larger than the square")
        }
    }

    @Test("two squares far apart: two boxes; squares that stop are taken into the background within 80 frames (10 in a row changed, then at 0.1 a frame; 59 with this noise), the defaults' alpha of 0.01 notwithstanding")
    func twoThenStill() {
        let d = MotionDetector()
        var scene = Scene()
        _ = Self.detect(d, &scene)
        scene.squares = [(60, 60), (500, 250)]
        _ = Self.detect(d, &scene)
        scene.squares = [(70, 60), (510, 250)]
        #expect(Self.detect(d, &scene).boxes.count == 2)
        // They stop: after the background took them in, no motion.
        var last = MotionDetector.Outcome(boxes: [], changed: 0, calibrating: false)
        for _ in 0..<80 { last = Self.detect(d, &scene) }
        #expect(last.boxes.isEmpty, "\(last)")
    }

    @Test("a flash (the whole picture 80 brighter): no motion reported, the background learnt anew; a square moving after it is seen again")
    func flash() {
        let d = MotionDetector()
        var scene = Scene()
        for _ in 0..<5 { _ = Self.detect(d, &scene) }
        scene.brightness = 80
        let flash = Self.detect(d, &scene)
        #expect(flash.boxes.isEmpty && flash.calibrating, "\(flash)")
        for _ in 0..<30 { _ = Self.detect(d, &scene) }
        scene.squares = [(300, 100)]
        _ = Self.detect(d, &scene)
        scene.squares = [(310, 100)]
        let after = Self.detect(d, &scene)
        #expect(!after.calibrating && after.boxes.count == 1, "\(after)")
    }

    @Test("a mask over the square's path: no motion there; the same square beside it is seen")
    func masked() throws {
        let mask = try AnalyticsSpec.mask("road=0,100 640,100 640,240 0,240")
        let d = MotionDetector(masks: [mask])
        var scene = Scene()
        _ = Self.detect(d, &scene)
        for i in 0..<5 {
            scene.squares = [(100 + 10 * i, 150)]
            #expect(Self.detect(d, &scene).boxes.isEmpty)
        }
        scene.squares = [(100, 280)]
        _ = Self.detect(d, &scene)
        scene.squares = [(110, 280)]
        #expect(Self.detect(d, &scene).boxes.count == 1)
    }

    @Test("masks replaced while it runs (PUT /masks): motion under the new mask is not seen from the next frame, the background kept; removed, it is seen again")
    func masksReplaced() throws {
        let d = MotionDetector()
        var scene = Scene()
        _ = Self.detect(d, &scene)
        scene.squares = [(100, 150)]
        #expect(Self.detect(d, &scene).boxes.count == 1)
        d.replaceMasks([try AnalyticsSpec.mask("road=0,100 640,100 640,240 0,240")])
        scene.squares = [(110, 150)]
        #expect(Self.detect(d, &scene).boxes.isEmpty)
        d.replaceMasks([])
        scene.squares = [(120, 150)]
        let seen = Self.detect(d, &scene)
        #expect(seen.boxes.count == 1 && !seen.calibrating, "\(seen)")
    }

    @Test("YUYV's luma (every other byte) gives the boxes the grey picture does")
    func yuyv() {
        let grey = MotionDetector(), packed = MotionDetector()
        var scene = Scene()
        for i in 0..<6 {
            scene.squares = i == 0 ? [] : [(200 + 12 * i, 120)]
            let pixels = scene.frame()
            let interleaved: [UInt8] = pixels.flatMap { [$0, UInt8(128)] }
            let a = pixels.withUnsafeBufferPointer { grey.detect(luma: $0.baseAddress!, width: scene.width, height: scene.height, stride: scene.width) }
            let b = interleaved.withUnsafeBufferPointer {
                packed.detect(luma: $0.baseAddress!, width: scene.width, height: scene.height, stride: scene.width * 2, step: 2)
            }
            #expect(a == b)
        }
    }

    @Test("settings: key=value, on; every refusal names the setting")
    func settings() throws {
        #expect(try MotionSettings(parsing: "on") == MotionSettings() && MotionSettings(parsing: "true") == MotionSettings())
        let s = try MotionSettings(parsing: "height=180,threshold=25,min_area=20,alpha=0.02,lightning=0.7,contrast=false,hold=5")
        #expect(s.height == 180 && s.threshold == 25 && s.minArea == 20 && s.alpha == 0.02 && s.lightning == 0.7 && !s.contrast && s.hold == 5)
        for bad in ["height=8", "threshold=x", "colour=1", "contrast=yes", "height"] {
            #expect(throws: MotionSettings.Problem.self) { try MotionSettings(parsing: bad) }
        }
    }
}
