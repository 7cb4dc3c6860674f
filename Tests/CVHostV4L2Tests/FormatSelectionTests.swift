import CVHostCore
import Testing
@testable import CVHostV4L2

@Suite("Camera format selection (--format, --pixel-format)")
struct FormatSelectionTests {
    static func f(_ code: String, _ pf: PixelFormat?, _ w: Int, _ h: Int, _ rates: [Double]) -> DeviceFormat {
        DeviceFormat(deviceFourCC: code, pixelFormat: pf, width: w, height: h,
                     frameRateRanges: rates.map { FrameRateRange(minFrameRate: $0, maxFrameRate: $0) })
    }

    /// A typical UVC webcam: YUYV up to 30 fps only at small sizes, MJPEG fast at every size.
    static let webcam = [
        f("YUYV", .yuyv, 640, 480, [30, 15]), f("YUYV", .yuyv, 1280, 720, [10]), f("YUYV", .yuyv, 1920, 1080, [5]),
        f("MJPG", .i420, 640, 480, [30]), f("MJPG", .i420, 1280, 720, [30]), f("MJPG", .i420, 1920, 1080, [30]),
        f("BA81", nil, 1280, 720, [30]),
        f("NV12", .nv12, 640, 480, [30]),
    ]

    @Test("parsing")
    func parsing() throws {
        #expect(try FormatRequest(parsing: "1280x720@30") == FormatRequest(size: .exact(width: 1280, height: 720), frameRate: 30))
        #expect(try FormatRequest(parsing: "high").size == .high)
        #expect(try FormatRequest(parsing: "@15") == FormatRequest(size: .medium, frameRate: 15))
        #expect(try FormatRequest(parsing: "input-priority").size == .inputPriority)
        for bad in ["720p", "1280x", "x720", "1280x720@fast", "1280x720@0"] {
            #expect(throws: CaptureError.self, "\(bad)") { try FormatRequest(parsing: bad) }
        }
    }

    @Test("the most direct format that reaches the frame rate")
    func choice() throws {
        // 640x480@30: NV12 is read by every plugin without conversion.
        let (a, fa) = try FormatRequest(parsing: "640x480@30").choose(from: FormatSelectionTests.webcam)
        #expect(a.deviceFourCC == "NV12" && fa == 30)
        // 1280x720@30: MJPEG (decoded by cvhost) before Bayer (converted by libv4l2).
        let (b, fb) = try FormatRequest(parsing: "1280x720@30").choose(from: FormatSelectionTests.webcam)
        #expect(b.deviceFourCC == "MJPG" && fb == 30)
        // 1280x720 at any rate: the fastest (YUYV is more direct, but 10 fps).
        let (c, fc) = try FormatRequest(parsing: "1280x720").choose(from: FormatSelectionTests.webcam)
        #expect(c.deviceFourCC == "MJPG" && fc == 30)
        // Asked for 10 fps: YUYV reaches it and is more direct.
        let (e, fe) = try FormatRequest(parsing: "1280x720@10").choose(from: FormatSelectionTests.webcam)
        #expect(e.deviceFourCC == "YUYV" && fe == 10)
        // A size between the offered ones: the next larger.
        let (d, _) = try FormatRequest(parsing: "800x600").choose(from: FormatSelectionTests.webcam)
        #expect(d.width == 1280 && d.height == 720)
        #expect(try FormatRequest(parsing: "high").choose(from: FormatSelectionTests.webcam).0.width == 1920)
        #expect(try FormatRequest(parsing: "low").choose(from: FormatSelectionTests.webcam).0.width == 640)
    }

    @Test("a pixel format by four-character code or by cvhost's name; clear refusals")
    func pixelFormats() throws {
        #expect(try FormatRequest(parsing: "640x480", pixelFormat: "YUYV").choose(from: FormatSelectionTests.webcam).0.deviceFourCC == "YUYV")
        #expect(try FormatRequest(parsing: "640x480", pixelFormat: "nv12").choose(from: FormatSelectionTests.webcam).0.deviceFourCC == "NV12")
        do {
            _ = try FormatRequest(parsing: "640x480", pixelFormat: "H264").choose(from: FormatSelectionTests.webcam)
            Issue.record("H264 was accepted")
        } catch let e as CaptureError {
            #expect(e.message.contains("BA81, MJPG, NV12, YUYV"))
        }
        #expect(throws: CaptureError.self) { try FormatRequest(parsing: "4096x2160").choose(from: FormatSelectionTests.webcam) }
    }

    @Test("control values: numbers, on/off, menu items by name")
    func controlValues() {
        let menu = V4L2ControlInfo(name: "power_line_frequency", id: 1, kind: .menu, minimum: 0, maximum: 2, step: 1, defaultValue: 1,
                                   menu: [(0, "Disabled"), (1, "50 Hz"), (2, "60 Hz")], isReadOnly: false, isInactive: false)
        #expect(V4L2Controls.parse("60 Hz", for: menu) == 2)
        #expect(V4L2Controls.parse("50hz", for: menu) == 1)
        #expect(V4L2Controls.parse("off", for: menu) == 0)
        #expect(V4L2Controls.parse("7", for: menu) == 7)
        #expect(V4L2Controls.parse("loud", for: menu) == nil)
        #expect(V4L2Controls.describe(2, for: menu) == "60 Hz")
        #expect(V4L2Controls.id(named: "torch") != nil && V4L2Controls.id(named: "Brightness") == nil)
        #expect(V4L2IO.fourCC("YUYV").map(V4L2IO.fourCC) == "YUYV")
    }
}
