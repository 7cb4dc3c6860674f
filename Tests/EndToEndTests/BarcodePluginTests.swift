import CVHostTestSupport
import Foundation
import Testing

/// The barcode plugin on images and video made by real encoders.
@Suite("barcode plugin")
struct BarcodePluginTests {
    static func run(_ plugin: String, _ input: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> CommandResult {
        let r = try CVHostBinary.run(["run", "--plugin", plugin, "--input", input, "-q", "--metrics-interval", "0"])
        // 22: nothing found (a code-free image, a retry turned off), as zbarimg's 4.
        #expect(r.exitCode == (r.events("result").isEmpty ? 22 : 0), "\(r.stderr)", sourceLocation: sourceLocation)
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
            ("qr-inverted.png", ["qrcode:INVERTED-QR"]),  // light on dark: the default inverted retry
            ("datamatrix.png", ["datamatrix:CVHOST-DM-0042"]),
            ("aztec.png", ["aztec:CVHOST AZTEC TICKET 0042"]),
            ("pdf417.png", ["pdf417:CVHOST-PDF417-0042"]),
            ("microqr.png", ["microqr:CVH42"]),
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

    @Test("an inverted QR code decodes with the default options, and not with inverted=false; mirrored with the retry")
    func retries() throws {
        let inverted = try BarcodePluginTests.run("barcode", try BarcodeFixtures.path("qr-inverted.png"))
        let d = try #require(inverted.events("result").first?["data"] as? [String: Any])
        #expect(d["text"] as? String == "INVERTED-QR" && d["inverted"] as? Bool == true)
        for engine in ["zbar", "zxing"] {
            let one = try BarcodePluginTests.run("barcode:engine=\(engine)", try BarcodeFixtures.path("qr-inverted.png"))
            #expect(BarcodePluginTests.codes(one) == ["qrcode:INVERTED-QR"], "engine=\(engine)")
        }
        let off = try BarcodePluginTests.run("barcode:inverted=false", try BarcodeFixtures.path("qr-inverted.png"))
        #expect(BarcodePluginTests.codes(off).isEmpty)
        let mirrored = try BarcodePluginTests.run("barcode:mirrored=true", try BarcodeFixtures.path("qr-mirrored.png"))
        #expect(BarcodePluginTests.codes(mirrored) == ["qrcode:MIRRORED-QR"])
    }

    @Test("DataMatrix, Aztec, PDF417 and Micro QR from zint: payload, engine and corners clockwise from the code's top-left")
    func matrixCodes() throws {
        // make-barcode-images.sh pads each zint symbol (6 px modules) by 40 px: its corners are at
        // 40 and 40 + its size in pixels.
        let symbols: [(String, String, Double, Double)] = [
            ("datamatrix.png", "datamatrix", 96, 96), ("aztec.png", "aztec", 114, 114),
            ("pdf417.png", "pdf417", 618, 180), ("microqr.png", "microqr", 78, 78),
        ]
        for (image, symbology, width, height) in symbols {
            let r = try BarcodePluginTests.run("barcode", try BarcodeFixtures.path(image))
            let d = try #require(r.events("result").first?["data"] as? [String: Any], "\(image)")
            #expect(d["symbology"] as? String == symbology && d["engine"] as? String == "zxing")
            let corners = try #require(d["corners"] as? [[Double]])
            let expected: [[Double]] = [[40, 40], [40 + width, 40], [40 + width, 40 + height], [40, 40 + height]]
            for (c, e) in zip(corners, expected) {
                #expect(abs(c[0] - e[0]) <= 2 && abs(c[1] - e[1]) <= 2, "\(image): corner \(c) should be near \(e)")
            }
        }
        // Turned a quarter clockwise, the DataMatrix's own top-left is now at the top right.
        let turned = try BarcodePluginTests.run("barcode:rotate=90", try BarcodeFixtures.path("datamatrix.png"))
        let t = try #require(turned.events("result").first?["data"] as? [String: Any])
        let first = try #require((t["corners"] as? [[Double]])?.first)
        #expect(t["orientation"] as? String == "right" && abs(first[0] - 135) <= 2 && abs(first[1] - 40) <= 2, "\(t)")
    }

    @Test("what zxing tells beyond the payload: EC level, AIM id, GS1, structured append")
    func details() throws {
        let qr = try #require(try BarcodePluginTests.run("barcode", try BarcodeFixtures.path("qr-text.png")).events("result").first?["data"]
            as? [String: Any])
        #expect(qr["ec_level"] as? String == "L" && qr["aim_id"] as? String == "]Q1" && qr["gs1"] as? Bool == false)
        #expect(qr["content_type"] as? String == "text" && qr["eci"] as? Bool == false && qr["structured_append"] == nil)
        let gs1 = try #require(try BarcodePluginTests.run("barcode", try BarcodeFixtures.path("gs1-datamatrix.png")).events("result").first?["data"]
            as? [String: Any])
        #expect(gs1["gs1"] as? Bool == true && gs1["aim_id"] as? String == "]d2")
        #expect(gs1["text"] as? String == "(01)09501101530003(17)270101(10)AB12")
        let part = try #require(try BarcodePluginTests.run("barcode", try BarcodeFixtures.path("qr-part1of2.png")).events("result").first?["data"]
            as? [String: Any])
        let sequence = try #require(part["structured_append"] as? [String: Any])
        #expect(sequence["index"] as? Int == 0 && sequence["count"] as? Int == 2 && sequence["id"] as? String == "7")
        // zbar tells none of it.
        let zbar = try #require(try BarcodePluginTests.run("barcode:engine=zbar", try BarcodeFixtures.path("qr-text.png")).events("result")
            .first?["data"] as? [String: Any])
        #expect(zbar["engine"] as? String == "zbar" && zbar["ec_level"] == nil)
    }

    @Test("engines: each alone, both with one result per code, and a symbology the chosen engine cannot read refused")
    func engines() throws {
        let scene = try BarcodeFixtures.path("scene.png")
        let all = ["qrcode:https://example.com/cvhost?id=42", "code128:CVHOST-128", "ean13:4006381333931"]
        for engine in ["zbar", "zxing", "both", "auto"] {
            let r = try BarcodePluginTests.run("barcode:engine=\(engine)", scene)
            #expect(BarcodePluginTests.codes(r).sorted() == all.sorted(), "engine=\(engine): each code once")
            let engines = Set(r.events("result").compactMap { ($0["data"] as? [String: Any])?["engine"] as? String })
            #expect(engine == "zbar" ? engines == ["zbar"] : engines == ["zxing"], "engine=\(engine): \(engines)")
        }
        let refused = try CVHostBinary.run(["run", "--plugin", "barcode:engine=zbar,symbologies=qrcode+datamatrix", "--input", scene])
        #expect(refused.exitCode == 18 && refused.stderr.contains("engine=zbar cannot read datamatrix"), "\(refused.stderr)")
        let zbarOnly = try CVHostBinary.run(["run", "--plugin", "barcode:engine=zxing,symbologies=isbn13", "--input", scene])
        #expect(zbarOnly.exitCode == 18 && zbarOnly.stderr.contains("cannot read isbn13"), "\(zbarOnly.stderr)")
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
        // A value of the right type that the plugin does not accept is a bad option value (18), not a failed start (16).
        let bad = try CVHostBinary.run(["run", "--plugin", "barcode:symbologies=qrcode+morse", "--input", scene])
        #expect(bad.exitCode == 18 && bad.stderr.contains("unknown symbology 'morse'") && bad.stderr.contains("datamatrix"), "\(bad.stderr)")
        let badROI = try CVHostBinary.run(["run", "--plugin", "barcode:roi=0.5:0.5:0.9:0.9", "--input", scene])
        #expect(badROI.exitCode == 18 && badROI.stderr.contains("roi="))
        let mixed = try BarcodePluginTests.run("barcode:symbologies=qrcode+datamatrix", try BarcodeFixtures.path("datamatrix.png"))
        #expect(BarcodePluginTests.codes(mixed) == ["datamatrix:CVHOST-DM-0042"])
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
        #expect(refused.exitCode == 18 && refused.stderr.contains("instances=1"), "\(refused.stderr)")
    }

    @Test("the example consumer prints each code once as it comes into view")
    func exampleConsumer() throws {
        let text = try Tool.check("/bin/bash", ["-c", "'\(CVHostBinary.path)' run --plugin barcode:report=new --input '\(BarcodeFixtures.demoVideo)' -q"
            + " | python3 '\(PluginFixtures.packageRoot)/examples/consume_barcodes.py'"])
        let lines = text.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().joined(separator: " ") }
        // In reading order: the EAN-13's top is above the QR code's.
        #expect(lines == ["ean13 4006381333931", "qrcode https://example.com/cvhost?id=42", "code128 CVHOST-128",
                          "90 frames, stopped: end_of_input"])
    }

    @Test("parallel instances: the same results in the same order as one instance")
    func parallel() throws {
        func lines(_ plugin: String) throws -> [String] {
            try BarcodePluginTests.run(plugin, BarcodeFixtures.demoVideo).comparableResults
        }
        let one = try lines("barcode")
        #expect(one.count == 240)
        #expect(try lines("barcode:instances=2") == one)
    }
}
