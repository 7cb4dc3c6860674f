import CVHostTestSupport
import Foundation
import Testing

/// The barcode plugin on images and video made by real encoders.
@Suite("barcode plugin")
struct BarcodePluginTests {
    static func run(_ plugin: String, _ input: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> CommandResult {
        let r = try CVHostBinary.run(["run", "--plugin", plugin, "--input", input, "-q", "--metrics-interval", "0"])
        #expect(r.exitCode == 0, "\(r.stderr)", sourceLocation: sourceLocation)
        let problems = try CVHostBinary.schemaProblems(r.stdout)
        #expect(problems == nil, "\(problems ?? "")", sourceLocation: sourceLocation)
        return r
    }

    static func codes(_ r: CommandResult) -> [String] {
        r.events("result").compactMap { e in
            guard let d = e["data"] as? [String: Any] else { return nil }
            return "\(d["symbology"] as? String ?? "?"):\(d["text"] as? String ?? "<binary>")"
        }
    }

    @Test("the expected decodes of the project's fixtures, and nothing on a code-free image")
    func pinnedDecodes() throws {
        let expected: [(String, [String])] = [
            ("qr-text.png", ["qrcode:https://example.com/cvhost?id=42"]),
            ("qr-utf8.png", ["qrcode:Grüße, 日本"]),
            ("ean13.png", ["ean13:4006381333931"]),
            ("code128.png", ["code128:CVHOST-128"]),
            ("scene.png", ["qrcode:https://example.com/cvhost?id=42", "code128:CVHOST-128", "ean13:4006381333931"]),
            ("blank.png", []),
            ("qr-inverted.png", []),  // light on dark: only with inverted=true
        ]
        for (image, codes) in expected {
            let r = try BarcodePluginTests.run("barcode", try BarcodeFixtures.path(image))
            #expect(Set(BarcodePluginTests.codes(r)) == Set(codes), "\(image)")
            #expect(BarcodePluginTests.codes(r).count == codes.count, "\(image): each code once")
        }
    }

    @Test("a binary payload has no text, its bytes in base64")
    func binaryPayload() throws {
        let r = try BarcodePluginTests.run("barcode", try BarcodeFixtures.path("qr-binary.png"))
        let d = try #require(r.events("result").first?["data"] as? [String: Any])
        #expect(d["binary"] as? Bool == true)
        #expect(d["text"] is NSNull)
        #expect(d["raw_base64"] as? String == "AAEC/v+A")  // 00 01 02 fe ff 80
    }

    @Test("inverted and mirrored QR codes decode with the retries on")
    func retries() throws {
        let inverted = try BarcodePluginTests.run("barcode:inverted=true,mirrored=true", try BarcodeFixtures.path("qr-inverted.png"))
        let d = try #require(inverted.events("result").first?["data"] as? [String: Any])
        #expect(d["text"] as? String == "INVERTED-QR" && d["inverted"] as? Bool == true)
        let mirrored = try BarcodePluginTests.run("barcode:inverted=true,mirrored=true", try BarcodeFixtures.path("qr-mirrored.png"))
        #expect(BarcodePluginTests.codes(mirrored) == ["qrcode:MIRRORED-QR"])
    }

    @Test("geometry: corners clockwise from the top-left, bounds, and normalized copies")
    func geometry() throws {
        // qrencode -s 6 -m 4: the code starts 24 px in and is 25 modules (150 px) wide.
        let r = try BarcodePluginTests.run("barcode", try BarcodeFixtures.path("qr-text.png"))
        let d = try #require(r.events("result").first?["data"] as? [String: Any])
        let corners = try #require(d["corners"] as? [[Double]])
        let expected: [[Double]] = [[24, 24], [174, 24], [174, 174], [24, 174]]
        for (c, e) in zip(corners, expected) {
            #expect(abs(c[0] - e[0]) <= 3 && abs(c[1] - e[1]) <= 3, "corner \(c) should be near \(e)")
        }
        let n = try #require((d["normalized"] as? [String: Any])?["bounds"] as? [String: Double])
        #expect(abs(n["x"]! - 24.0 / 198) < 0.02 && abs(n["width"]! - 150.0 / 198) < 0.03)
        #expect(d["orientation"] as? String == "up")
        // The plugin sees turned frames as they are turned: a code turned clockwise reads top to bottom.
        for (rotate, orientation) in [("90", "right"), ("180", "down"), ("270", "left")] {
            let turned = try BarcodePluginTests.run("barcode:rotate=\(rotate)", try BarcodeFixtures.path("qr-text.png"))
            let t = turned.events("result").first?["data"] as? [String: Any]
            #expect(t?["text"] as? String == "https://example.com/cvhost?id=42")
            #expect(t?["orientation"] as? String == orientation, "rotate=\(rotate)")
        }
    }

    @Test("region of interest and symbology choice")
    func roiAndSymbologies() throws {
        let scene = try BarcodeFixtures.path("scene.png")
        // The QR sits at x 60..258 of 1280: the left quarter holds it alone.
        let left = try BarcodePluginTests.run("barcode:roi=0:0:0.25:1", scene)
        #expect(BarcodePluginTests.codes(left) == ["qrcode:https://example.com/cvhost?id=42"])
        let x = try #require(((left.events("result").first?["data"] as? [String: Any])?["bounds"] as? [String: Double])?["x"])
        #expect(abs(x - 84) <= 4, "bounds are in frame coordinates, not the region's")
        let right = try BarcodePluginTests.run("barcode:roi=0.3:0:0.7:1", scene)
        #expect(Set(BarcodePluginTests.codes(right)) == ["code128:CVHOST-128", "ean13:4006381333931"])
        let onlyQR = try BarcodePluginTests.run("barcode:symbologies=qrcode", scene)
        #expect(BarcodePluginTests.codes(onlyQR) == ["qrcode:https://example.com/cvhost?id=42"])
        let bad = try CVHostBinary.run(["run", "--plugin", "barcode:symbologies=qrcode+morse", "--input", scene])
        #expect(bad.exitCode == 16 && bad.stderr.contains("unknown symbology 'morse'"))
        let badROI = try CVHostBinary.run(["run", "--plugin", "barcode:roi=0.5:0.5:0.9:0.9", "--input", scene])
        #expect(badROI.exitCode == 16 && badROI.stderr.contains("roi="))
    }

    @Test("report=new: each code once, then lost; report=track adds updates; both refuse parallel instances")
    func deduplication() throws {
        let new = try BarcodePluginTests.run("barcode:report=new", BarcodeFixtures.demoVideo)
        let types = new.events("result").compactMap { $0["type"] as? String }
        #expect(types.filter { $0 == "barcode" }.count == 3)
        #expect(types.filter { $0 == "barcode.lost" }.count == 3)
        let lost = new.events("result").filter { $0["type"] as? String == "barcode.lost" }
        #expect(lost.allSatisfy { ($0["data"] as? [String: Any])?["frames_seen"] as? Int ?? 0 >= 60 })
        let track = try BarcodePluginTests.run("barcode:report=track", BarcodeFixtures.demoVideo)
        #expect(track.events("result").filter { $0["type"] as? String == "barcode.update" }.count == 240 - 3)
        let refused = try CVHostBinary.run(["run", "--plugin", "barcode:report=new,instances=2", "--input", BarcodeFixtures.demoVideo])
        #expect(refused.exitCode == 16 && refused.stderr.contains("instances=1"))
    }

    @Test("the example consumer prints each code once as it comes into view")
    func exampleConsumer() throws {
        let text = try Tool.check("/bin/bash", ["-c", "'\(CVHostBinary.path)' run --plugin barcode:report=new --input '\(BarcodeFixtures.demoVideo)' -q"
            + " | python3 '\(PluginFixtures.packageRoot)/examples/consume_barcodes.py'"])
        let lines = text.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().joined(separator: " ") }
        #expect(lines == ["qrcode https://example.com/cvhost?id=42", "ean13 4006381333931", "code128 CVHOST-128",
                          "90 frames, stopped: end_of_input"])
    }

    @Test("parallel instances: the same results in the same order as one instance")
    func parallel() throws {
        func lines(_ plugin: String) throws -> [String] {
            try BarcodePluginTests.run(plugin, BarcodeFixtures.demoVideo).lines.filter { $0.contains("\"event\":\"result\"") }
                .map { $0.replacingOccurrences(of: #""ts":[0-9.]+"#, with: "", options: .regularExpression) }
        }
        let one = try lines("barcode")
        #expect(one.count == 240)
        #expect(try lines("barcode:instances=2") == one)
    }
}
