import CVHostCore
import Testing

/// A frame's motion gathered into squares of a detector's input size (FrameMotion.squares).
@Suite("Motion regions as squares")
struct MotionSquaresTests {
    typealias R = FrameMotion.Region

    static func motion(_ regions: [R], active: Bool = true) -> FrameMotion { FrameMotion(active: active, regions: regions) }

    @Test("one box: a square of the side centred on it; by an edge, moved inside the picture")
    func one() {
        #expect(Self.motion([R(x: 600, y: 300, width: 40, height: 60)]).squares(side: 320, width: 1280, height: 720)
                == [R(x: 460, y: 170, width: 320, height: 320)])
        #expect(Self.motion([R(x: 10, y: 690, width: 40, height: 20)]).squares(side: 320, width: 1280, height: 720)
                == [R(x: 0, y: 400, width: 320, height: 320)])
    }

    @Test("boxes that fit in one square together share it; far apart, a square each; a box larger than the side, a square as large")
    func gathered() {
        let near = Self.motion([R(x: 100, y: 100, width: 50, height: 50), R(x: 300, y: 200, width: 60, height: 60)])
        #expect(near.squares(side: 320, width: 1920, height: 1080) == [R(x: 70, y: 20, width: 320, height: 320)])
        let far = Self.motion([R(x: 100, y: 100, width: 50, height: 50), R(x: 1500, y: 800, width: 60, height: 60)])
        #expect(far.squares(side: 320, width: 1920, height: 1080).count == 2)
        let big = Self.motion([R(x: 400, y: 100, width: 500, height: 300)])
        #expect(big.squares(side: 320, width: 1920, height: 1080) == [R(x: 400, y: 0, width: 500, height: 500)])
    }

    @Test("the whole frame (no squares) when still, when more than four squares, or when they would cover more than half the picture")
    func whole() {
        #expect(Self.motion([]).squares(side: 320, width: 1280, height: 720).isEmpty)
        #expect(Self.motion([R(x: 0, y: 0, width: 10, height: 10)], active: false).squares(side: 320, width: 1280, height: 720).isEmpty)
        let five = (0..<5).map { R(x: $0 * 380, y: 0, width: 10, height: 10) }
        #expect(Self.motion(five).squares(side: 320, width: 1920, height: 1080).isEmpty)
        #expect(Self.motion([R(x: 0, y: 0, width: 10, height: 10)]).squares(side: 320, width: 640, height: 360).count == 1)
        #expect(Self.motion([R(x: 0, y: 0, width: 10, height: 10), R(x: 600, y: 300, width: 10, height: 10)])
                    .squares(side: 320, width: 640, height: 360).isEmpty)
    }

    @Test("turned: a region of a 640x360 capture, mirrored and rotated 90 degrees, in the 360x640 picture the plugin sees")
    func turned() {
        let m = Self.motion([R(x: 10, y: 20, width: 30, height: 40)]).turned(VideoOrientation(isMirrored: true, rotationAngle: 90), width: 640, height: 360)
        // Mirrored: x 640 - 10 - 30 = 600; rotated clockwise: x = 360 - 20 - 40 = 300, y = 600.
        #expect(m.regions == [R(x: 300, y: 600, width: 40, height: 30)])
    }
}
