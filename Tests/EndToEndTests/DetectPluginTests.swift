import CVHostTestSupport
import Foundation
import Testing

/// The detect plugin (`--plugin detect:model=FILE.onnx`): the user's own ONNX model, run with
/// onnxruntime in a Python worker. Its models are built by the test (Tests/Fixtures/detect_models.py,
/// with Debian's python3-onnx), one per output layout, with outputs known to the box: five boxes in
/// the model's 320x320 input (see that file), which a 640x480 picture letterboxed into it (scale
/// 0.5, 40 pixels of pad above and below) maps to exact frame pixels.
@Suite("Detect plugin: your own ONNX model")
struct DetectPluginTests {
    static let folder = TestFolders.make("detect")
    /// The project's virtual environment with onnxruntime (scripts/install-deps.sh --tests makes it).
    static let venvPython = PluginFixtures.packageRoot + "/.venv-onnx/bin/python3"
    static let python = ["CVHOST_PYTHON": venvPython]

    /// The models, built once.
    static let models: String = {
        let r = try? Tool.run("/usr/bin/python3", [PluginFixtures.packageRoot + "/Tests/Fixtures/detect_models.py", folder])
        precondition(r?.status == 0, "building the test models failed (python3-onnx: scripts/install-deps.sh --tests): \(r?.output ?? "")")
        return folder
    }()

    /// A 640x480 picture (PPM): red on the left half, blue on the right; or all red.
    static func picture(_ name: String, halves: Bool) throws -> String {
        let path = folder + "/\(name).ppm"
        var bytes = Array("P6 640 480 255\n".utf8)
        let red: [UInt8] = [255, 0, 0], blue: [UInt8] = [0, 0, 255]
        for _ in 0..<480 {
            for x in 0..<640 { bytes += halves && x >= 320 ? blue : red }
        }
        // Whole or not at all: tests side by side write the same picture while others read it.
        try Data(bytes).write(to: URL(fileURLWithPath: path), options: .atomic)
        return path
    }

    static func model(_ name: String) -> String { models + "/\(name).onnx" }

    /// A folder with the files the README's detect commands name (yolov8n.onnx, my-ssd.onnx and its
    /// labels.txt, colour.onnx), made of the test models: the README's command lines run as written there.
    static let readmeFiles: String = {
        let readme = folder + "/readme"
        try? FileManager.default.createDirectory(atPath: readme, withIntermediateDirectories: true)
        for (name, from) in [("yolov8n.onnx", "yolov8"), ("my-ssd.onnx", "ssd"), ("colour.onnx", "colour")] {
            try? FileManager.default.copyItem(atPath: model(from), toPath: readme + "/" + name)
        }
        try? "background\nperson\ncar\n".write(toFile: readme + "/labels.txt", atomically: true, encoding: .utf8)
        return readme
    }()

    /// One object as the test compares it: label, confidence and box in the frame's pixels.
    struct Object: Equatable, CustomStringConvertible {
        let label: String
        let confidence: Double
        let box: [Double]
        var description: String { "\(label) \(confidence) \(box)" }
    }

    static func objects(_ spec: String, input: String? = nil, environment: [String: String] = python) throws -> (CommandResult, [Object]) {
        let r = try CVHostBinary.run(["run", "--plugin", "detect:" + spec, "--input", input ?? picture("halves", halves: true), "--metrics-interval", "0"],
                                     timeout: 120, environment: environment)
        let found = r.events("result").compactMap { e -> Object? in
            guard e["type"] as? String == "object", let d = e["data"] as? [String: Any], let b = d["bounds"] as? [String: Double] else { return nil }
            return Object(label: d["label"] as? String ?? "?", confidence: d["confidence"] as? Double ?? -1,
                          box: [b["x"]!, b["y"]!, b["width"]!, b["height"]!])
        }
        return (r, found)
    }

    // The five boxes of the models, in the 640x480 frame (letterboxed), best first after NMS.
    static let a = Object(label: "cat", confidence: 0.9, box: [160, 80, 80, 80])
    static let b = Object(label: "cat", confidence: 0.8, box: [168, 80, 80, 80])
    static let c = Object(label: "dog", confidence: 0.85, box: [164, 80, 80, 80])
    static let e = Object(label: "cat", confidence: 0.6, box: [440, 290, 120, 60])

    @Test("each layout is found from the model itself: YOLOv8, YOLOv5, end-to-end, SSD raw and as TensorFlow exports it, one class; boxes exact in frame pixels")
    func layouts() throws {
        let labels = Self.folder + "/ssd-labels.txt"
        try "background\ncat\ndog\n".write(toFile: labels, atomically: true, encoding: .utf8)
        let one = Self.folder + "/one.txt"
        try "person\n".write(toFile: one, atomically: true, encoding: .utf8)
        let cases: [(spec: String, expected: [Object])] = [
            ("model=\(Self.model("yolov8"))", [Self.a, Self.c, Self.e]),
            ("model=\(Self.model("yolov5"))", [Self.a, Self.c, Self.e]),
            // The model merged its boxes: B is kept, as the model gave it.
            ("model=\(Self.model("end2end"))", [Self.a, Self.c, Self.b, Self.e]),
            // Class 0 is background: its box is never reported.
            ("model=\(Self.model("ssd")),labels=\(labels)", [Self.a, Self.c, Self.e]),
            // y-first boxes, classes and a count: 3 of its 4 rows.
            ("model=\(Self.model("ssd-tf")),labels=\(labels)", [Self.a, Self.c, Self.e]),
            // No metadata: labels from a file, or the class number.
            ("model=\(Self.model("yolov8-oneclass")),labels=\(one)", [Self.a, Self.e].map { Object(label: "person", confidence: $0.confidence, box: $0.box) }),
            ("model=\(Self.model("yolov8-oneclass"))", [Self.a, Self.e].map { Object(label: "0", confidence: $0.confidence, box: $0.box) }),
        ]
        try Self.expectObjects(cases, schema: true)
    }

    /// Runs each spec on the halves picture: exit 0 and exactly these objects, best first (and, `schema`, valid lines).
    static func expectObjects(_ cases: [(spec: String, expected: [Object])], schema: Bool = false) throws {
        for (spec, expected) in cases {
            let (r, found) = try Self.objects(spec)
            #expect(r.exitCode == 0, "\(spec): \(r.stderr)")
            #expect(found == expected, "\(spec)")
            if schema { #expect(try CVHostBinary.schemaProblems(r.stdout) == nil, "\(spec)") }
        }
    }

    @Test("NMS per class or across classes, the classes filter, max_detections and confidence; stretch maps each axis on its own")
    func postProcessing() throws {
        let m = "model=\(Self.model("yolov8"))"
        let cases: [(spec: String, expected: [Object])] = [
            ("\(m),agnostic=true", [Self.a, Self.e]),
            ("\(m),iou=0.9", [Self.a, Self.c, Self.b, Self.e]),  // B overlaps A by 0.82: kept
            ("\(m),classes=dog", [Self.c]),
            ("\(m),classes=cat+dog,max_detections=2", [Self.a, Self.c]),
            ("\(m),confidence=0.7", [Self.a, Self.c]),
            ("\(m),confidence=0.05", [Self.a, Self.c, Self.e, Object(label: "dog", confidence: 0.1, box: [480, 300, 40, 40])]),
            // 640x480 stretched to 320x320: x halved, y times 2/3.
            ("\(m),resize=stretch", [Object(label: "cat", confidence: 0.9, box: [160, 120, 80, 60]),
                                     Object(label: "dog", confidence: 0.85, box: [164, 120, 80, 60]),
                                     Object(label: "cat", confidence: 0.6, box: [440, 277.5, 120, 45])]),
        ]
        try Self.expectObjects(cases)
        // The same boxes in fractions of the frame.
        let (r, _) = try Self.objects(m)
        let first = try #require(r.events("result").first?["data"] as? [String: Any])
        #expect((first["normalized"] as? [String: Any])?["bounds"] as? [String: Double] == ["x": 0.25, "y": 0.166667, "width": 0.125, "height": 0.166667])
        #expect(first["class_id"] as? Int == 0)
    }

    @Test("an input of no fixed size: the size from the model's metadata, or size=; without either it is refused")
    func dynamicInput() throws {
        let (r1, withMetadata) = try Self.objects("model=\(Self.model("yolov8-dynamic"))")
        #expect(r1.exitCode == 0 && withMetadata == [Self.a, Self.c, Self.e], "\(r1.stderr)")
        let (r2, sized) = try Self.objects("model=\(Self.model("yolov8-dynamic-nometa")),size=320x320")
        #expect(r2.exitCode == 0 && sized.map(\.box) == [Self.a, Self.c, Self.e].map(\.box), "\(r2.stderr)")
        #expect(sized.map(\.label) == ["0", "1", "0"])
        let (r3, _) = try Self.objects("model=\(Self.model("yolov8-dynamic-nometa"))")
        #expect(r3.exitCode == 18 && r3.stderr.contains("no fixed size") && r3.stderr.contains("size=WIDTHxHEIGHT"), "\(r3.stderr)")
    }

    @Test("classifiers: the top labels of the whole frame, from probabilities or logits, in the channel order asked for, float NCHW or uint8 NHWC; a second stage labels each box by its own pixels")
    func classifiers() throws {
        let red = try Self.picture("red", halves: false)
        func classes(_ spec: String, input: String) throws -> (CommandResult, [String: Any]?) {
            let (r, _) = try Self.objects(spec, input: input)
            return (r, r.events("result").first { $0["type"] as? String == "classification" }?["data"] as? [String: Any])
        }
        for name in ["colour", "colour-softmax", "colour-uint8-nhwc"] {
            let (r, best) = try classes("model=\(Self.model(name))", input: red)
            #expect(r.exitCode == 0 && best?["label"] as? String == "red" && best?["class_id"] as? Int == 0, "\(name): \(r.stdout) \(r.stderr)")
            // softmax([10, 0, 0]) = 0.99991
            #expect(best?["confidence"] as? Double == 0.9999, "\(name)")
            #expect(try CVHostBinary.schemaProblems(r.stdout) == nil)
        }
        // Fed as BGR, the red picture's strongest channel is the model's third: "blue".
        let (_, bgr) = try classes("model=\(Self.model("colour")),color=bgr", input: red)
        #expect(bgr?["label"] as? String == "blue")
        let (_, two) = try classes("model=\(Self.model("colour")),top_k=2,confidence=0", input: red)
        #expect((two?["top"] as? [[String: Any]])?.compactMap { $0["label"] as? String } == ["red", "green"])
        // The detector's boxes on the red half are red, the one on the blue half blue.
        let (r, objects) = try Self.objects("model=\(Self.model("yolov8")),classify=\(Self.model("colour"))")
        #expect(r.exitCode == 0 && objects == [Self.a, Self.c, Self.e], "\(r.stderr)")
        let labels = r.events("result").compactMap { (($0["data"] as? [String: Any])?["classification"] as? [String: Any])?["label"] as? String }
        #expect(labels == ["red", "red", "blue"])
        #expect(try CVHostBinary.schemaProblems(r.stdout) == nil)
    }

    @Test("a model that gives a NaN or infinite box beside good ones: those skipped and said, the frame's good boxes kept; a class name's terminal escape shown, not obeyed")
    func nonFinite() throws {
        let (r, found) = try Self.objects("model=\(Self.model("nan-box"))")
        #expect(r.exitCode == 0, "\(r.stderr)")
        // The frame's boxes as from the plain model: none lost with the bad ones.
        let (_, plain) = try Self.objects("model=\(Self.model("yolov8"))")
        #expect(found.map(\.box) == plain.map(\.box) && !found.isEmpty, "\(found) vs \(plain)")
        #expect(found.contains { $0.label == "?[31mcat" }, "\(found)")
        #expect(r.stderr.contains("that are not numbers (NaN, infinite): they are skipped") && r.stderr.contains("2 boxes or scores that are not numbers skipped"),
                "\(r.stderr)")
        #expect(!r.stderr.unicodeScalars.contains("\u{1b}"))
    }

    @Test("a labels file's lines end at newlines alone: \\v, \\f, U+0085 and U+2028 inside a label do not make more labels than the model's classes")
    func labelsLineBreaks() throws {
        let labels = Self.folder + "/odd-breaks.txt"
        try "cat\u{0B}kitten\u{0C}\u{85}\r\ndog\u{2028}puppy\n".write(toFile: labels, atomically: true, encoding: .utf8)
        let (r, found) = try Self.objects("model=\(Self.model("yolov8")),labels=\(labels)")
        #expect(r.exitCode == 0, "\(r.stderr)")
        // Two labels for the two classes (white space at a label's ends trimmed; control characters as `?`).
        #expect(Set(found.map(\.label)) == ["cat?kitten", "dog?puppy"], "\(found)")
        // classes= matches labels whatever their case (NudeNet's FACE_FEMALE as face_female); its start line not under -q.
        let (upper, cats) = try Self.objects("model=\(Self.model("yolov8")),classes=CAT")
        #expect(upper.exitCode == 0 && !cats.isEmpty && cats.allSatisfy { $0.label == "cat" }, "\(upper.stderr)")
        let quiet = try CVHostBinary.run(["run", "-q", "--plugin", "detect:model=\(Self.model("yolov8"))", "--input", try Self.picture("halves", halves: true),
                                          "--metrics-interval", "0"], timeout: 120, environment: Self.python)
        #expect(quiet.exitCode == 0 && !quiet.stderr.contains("detect: yolov8.onnx"), "\(quiet.stderr)")
    }

    @Test("each refusal is one line naming the thing and what to do, with its exit code, and no traceback")
    func refusals() throws {
        let notes = Self.folder + "/notes.txt"
        try "not a model\n".write(toFile: notes, atomically: true, encoding: .utf8)
        let three = Self.folder + "/three.txt"
        try "a\nb\nc\n".write(toFile: three, atomically: true, encoding: .utf8)
        let v8 = Self.model("yolov8")
        let cases: [(spec: String, environment: [String: String], code: Int32, says: [String])] = [
            ("threads=1", Self.python, 18, ["give the model to run", "model=FILE.onnx"]),
            ("model=\(Self.folder)/absent.onnx", Self.python, 18, ["absent.onnx: no such file"]),
            ("model=\(notes)", Self.python, 18, ["is not an ONNX model", "Protobuf"]),
            ("model=\(v8),labels=\(three)", Self.python, 18, ["has 3 labels", "has 2 classes"]),
            ("model=\(Self.model("unreadable"))", Self.python, 18, ["cannot tell how to read its outputs", "[1, 2, 3, 4]", "set type="]),
            ("model=\(Self.model("colour")),type=yolov8", Self.python, 18, ["are not what type=yolov8 reads"]),
            ("model=\(v8),classes=bird+dog", Self.python, 18, ["bird is not a label", "cat, dog"]),
            ("model=\(v8),classes=dgo", Self.python, 18, ["dgo is not a label of the model; did you mean dog?"]),
            ("model=\(Self.model("int64-input"))", Self.python, 18, ["tensor(int64)", "float, float16 or uint8"]),
            ("model=\(v8),size=640", Self.python, 18, ["320x320", "cannot take size=640"]),
            ("model=\(v8),std=0", Self.python, 18, ["std=0"]),
            ("model=\(Self.model("colour")),classify=\(Self.model("colour"))", Self.python, 18, ["is a classifier itself"]),
            // A model file's metadata is anyone's to write.
            ("model=\(Self.model("names-huge"))", Self.python, 18, ["names class 10000000000", "65536 classes"]),
            ("model=\(Self.model("names-beyond"))", Self.python, 18, ["names 5 classes", "its output has 2"]),
            ("model=\(Self.model("imgsz-huge"))", Self.python, 18, ["imgsz=100000", "size=WIDTHxHEIGHT"]),
            ("model=\(Self.model("imgsz-negative"))", Self.python, 18, ["imgsz=-5", "size=WIDTHxHEIGHT"]),
            // Debian's python3 has no onnxruntime, and takes no pip installs: the venv to make.
            ("model=\(v8)", ["CVHOST_PYTHON": "/usr/bin/python3"], 16,
             ["onnxruntime cannot be imported by /usr/bin/python3", "python3 -m venv --system-site-packages", "pip install onnxruntime", "CVHOST_PYTHON="]),
        ]
        for (spec, environment, code, says) in cases {
            let (r, _) = try Self.objects(spec, environment: environment)
            #expect(r.exitCode == code, "\(spec): \(r.stderr)")
            let line = r.stderr.split(separator: "\n").first { $0.hasPrefix("cvhost: error: plugin detect") }.map(String.init) ?? ""
            #expect(says.allSatisfy { line.contains($0) }, "\(spec): \(r.stderr)")
            #expect(!r.stderr.contains("Traceback"), "\(spec): \(r.stderr)")
            #expect(r.events("result").isEmpty)
        }
    }

    @Test("the runtime's threads: the cores cvhost may use (its affinity) shared among the instances, or threads=N; said once at start with what was read from the model, and which runtime (OpenVINO by default where installed, as here)")
    func threads() throws {
        let cases: [(cpus: String, options: String, says: String)] = [
            ("0,1", ",runtime=onnxruntime", "2 onnxruntime threads for each of 1 instance(s), 2 cores"),
            ("0,1", ",runtime=onnxruntime,instances=2", "1 onnxruntime thread for each of 2 instance(s), 2 cores"),
            ("0", ",runtime=onnxruntime", "1 onnxruntime thread for each of 1 instance(s), 1 cores"),
            ("0", ",runtime=onnxruntime,threads=3", "3 onnxruntime threads for each of 1 instance(s), 1 cores"),
            ("0,1", ",runtime=openvino,precision=f32", "2 OpenVINO (f32) threads for each of 1 instance(s), 2 cores"),
            ("0,1", "", " OpenVINO ("),
        ]
        for (cpus, options, says) in cases {
            let r = try CVHostBinary.run(["run", "--plugin", "detect:model=\(Self.model("yolov8"))\(options)", "--input", try Self.picture("halves", halves: true),
                                          "--metrics-interval", "0"], timeout: 120, environment: Self.python, under: ["taskset", "-c", cpus],
                                         withStdin: false, onRunning: nil)
            #expect(r.exitCode == 0, "\(r.stderr)")
            let said = r.stderr.split(separator: "\n").filter { $0.hasPrefix("detect: yolov8.onnx: yolov8, 2 classes; input 320x320 float32 NCHW RGB, letterbox on 114 (made by cvhost); ") }
            #expect(said.count == 1 && (options.isEmpty ? said.first?.contains(says) : said.first?.hasSuffix(says)) == true, "\(cpus)\(options): \(r.stderr)")
        }
    }

    @Test("CVHOST_PYTHON and model= relative to the folder cvhost runs in, though its workers run in the plugin's")
    func relativePaths() throws {
        _ = Self.models
        // From the test's folder: up to / and down to the project's virtual environment.
        let up = String(repeating: "../", count: Self.folder.split(separator: "/").count)
        let r = try CVHostBinary.run(["run", "--plugin", "detect:model=yolov8.onnx", "--input", try Self.picture("halves", halves: true),
                                      "--metrics-interval", "0"],
                                     timeout: 120, environment: ["CVHOST_PYTHON": up + Self.venvPython.dropFirst()], inFolder: Self.folder)
        #expect(r.exitCode == 0 && r.events("result").count == 3, "\(r.stderr)")
    }

    @Test("the live view draws each object's box (a screenshot by headless Chromium) and lists it with its label, score and second-stage label")
    func liveView() throws {
        let port = freeLoopbackPort()
        let shot = Self.folder + "/live-view.png"
        var drawn = 0
        var dom = ""
        let page = "http://127.0.0.1:\(port)/"
        let r = try CVHostBinary.run(["run", "--plugin", "detect:model=\(Self.model("yolov8")),classify=\(Self.model("colour"))",
                                      "--input", try Self.picture("halves", halves: true), "--http", "127.0.0.1:\(port)", "--metrics-interval", "0"],
                                     timeout: 180, environment: Self.python, withStdin: false) { run in
            guard run.wait(until: { $0.contains("\"event\":\"session.stopped\"") }) else { return }
            // The page opened after the end shows the last picture and its results (the replay of
            // /events). A browser renders when it renders: a few tries, until the boxes show.
            let chromium = ["40", "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1280,800"]
            // The screenshot is taken once the page has drawn the three boxes over the picture it
            // loaded (later on a busy machine), not after a fixed time.
            let boxes = "document.querySelectorAll('#overlay rect.object').length >= 3 "
                + "&& (p => p.complete && p.naturalWidth > 0)(document.getElementById('picture'))"
            for _ in 0..<3 {
                _ = PageProbe.steps(page, [["wait": boxes], ["screenshot": shot]], timeout: 60, as: Bool.self)
                // The boxes' magenta (#e040fb), on neither the red nor the blue half nor the page.
                drawn = (try? Screenshot(shot, width: 1280, height: 800)).map { s in
                    (0..<s.height).reduce(0) { n, y in n + (0..<s.width).filter { x in let (r, g, b) = s.pixel(x, y); return r > 180 && g < 110 && b > 200 }.count }
                } ?? 0
                if drawn > 300 { break }
            }
            // The list fills as the page replays /events: on a loaded machine, not always within one try.
            for _ in 0..<4 where !dom.contains("cat 60%") {
                dom = (try? Tool.run("timeout", chromium + ["--timeout=10000", "--dump-dom", page]).output) ?? ""
            }
            kill(run.pid, SIGTERM)
        }
        #expect(r.exitCode == 0, "\(r.stderr)")
        #expect(drawn > 300, "\(drawn) pixels of the boxes' colour")
        for label in ["cat 90% · red", "dog 85% · red", "cat 60% · blue"] { #expect(dom.contains(label), "\(label): \(dom.suffix(1200))") }
    }

    /// NudeNet's trained YOLOv8n (its wheel, in the project's virtual environment): 18 classes, faces among them.
    static let realModel = PluginFixtures.packageRoot + "/.venv-onnx/lib/python3.11/site-packages/nudenet/320n.onnx"

    @Test("a trained YOLOv8 (NudeNet's, from PyPI) on the corpus's photos of people: the same boxes as a reference written with onnxruntime and numpy alone")
    func realModel() throws {
        try #require(FileManager.default.fileExists(atPath: Self.realModel), "no \(Self.realModel): run scripts/install-deps.sh --tests")
        try #require(Corpus.isPresent, "../shared/corpus is missing")
        // The photos as PPM, read the same by both (the reference has no JPEG decoder). At size=640
        // a 640x480 photo is letterboxed without scaling, so both feed the model the same pixels:
        // what is compared is everything else (the letterbox's place, the decoding, NMS, the boxes'
        // way back). (Scaled, the two differ by their resampling: see the README.)
        let photos = Self.folder + "/photos"
        try FileManager.default.createDirectory(atPath: photos, withIntermediateDirectories: true)
        let sources = try FileManager.default.contentsOfDirectory(atPath: Corpus.path("faces/images/640x480")).sorted()
        for name in sources {
            let r = try Tool.run("ffmpeg", ["-v", "error", "-y", "-i", Corpus.path("faces/images/640x480/" + name), "-pix_fmt", "rgb24",
                                            photos + "/" + (name as NSString).deletingPathExtension + ".ppm"])
            #expect(r.status == 0, "\(r.output)")
        }
        let images = try FileManager.default.contentsOfDirectory(atPath: photos).filter { $0.hasSuffix(".ppm") }.sorted().map { photos + "/" + $0 }
        #expect(images.count == 7)
        let reference = try Tool.run(Self.venvPython, [PluginFixtures.packageRoot + "/Tests/Fixtures/detect_reference.py", Self.realModel, "640"] + images)
        try #require(reference.status == 0, "\(reference.output)")
        let expected = reference.output.split(separator: "\n").map { line in
            ((try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [[Any]] ?? []).map { row in
                Object(label: row[0] as? String ?? "", confidence: row[1] as? Double ?? -1, box: row[2...].compactMap { $0 as? Double })
            }
        }
        let r = try CVHostBinary.run(["run", "--plugin", "detect:model=\(Self.realModel),size=640,runtime=onnxruntime", "--input", photos + "/*.ppm", "--metrics-interval", "0"],
                                     timeout: 120, environment: Self.python)
        #expect(r.exitCode == 0, "\(r.stderr)")
        var found: [String: [Object]] = [:]
        for e in r.events("result") {
            guard let image = e["image"] as? String, let d = e["data"] as? [String: Any], let b = d["bounds"] as? [String: Double] else { continue }
            found[image, default: []].append(Object(label: d["label"] as? String ?? "", confidence: d["confidence"] as? Double ?? -1,
                                                    box: [b["x"]!, b["y"]!, b["width"]!, b["height"]!]))
        }
        func iou(_ a: [Double], _ b: [Double]) -> Double {
            let w = max(0, min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0])), h = max(0, min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1]))
            return w * h / (a[2] * a[3] + b[2] * b[3] - w * h)
        }
        var compared = 0
        for (image, want) in zip(images, expected) {
            let got = found[image] ?? []
            #expect(got.map(\.label) == want.map(\.label), "\(image): \(got) against \(want)")
            for (g, w) in zip(got, want) {
                #expect(abs(g.confidence - w.confidence) <= 1e-3 && iou(g.box, w.box) >= 0.99, "\(image): \(g) against \(w)")
                compared += 1
            }
        }
        // People in them: faces found (the model's FACE_FEMALE and FACE_MALE) in most photos.
        #expect(compared >= 10 && found.values.joined().filter { $0.label.hasPrefix("FACE_") }.count >= 7, "\(found)")
    }

    @Test("runtime=openvino, and the default where OpenVINO is installed: NudeNet's YOLOv8n on the corpus's photos finds what onnxruntime finds (f32: the same scores within 1e-3; OpenVINO's own precision, bf16 on this CPU, within 0.03), and says the runtime at start")
    func openVINO() throws {
        try #require(FileManager.default.fileExists(atPath: Self.realModel), "no \(Self.realModel): run scripts/install-deps.sh --tests")
        try #require(Corpus.isPresent, "../shared/corpus is missing")
        let photos = Corpus.path("faces/images/640x480") + "/*.jpg"
        func objects(_ extra: String) throws -> (CommandResult, [String: [Object]]) {
            let r = try CVHostBinary.run(["run", "--plugin", "detect:model=\(Self.realModel)\(extra)", "--input", photos, "--metrics-interval", "0"],
                                         timeout: 120, environment: Self.python)
            var found: [String: [Object]] = [:]
            for e in r.events("result") {
                guard let image = e["image"] as? String, let d = e["data"] as? [String: Any], let b = d["bounds"] as? [String: Double] else { continue }
                found[image, default: []].append(Object(label: d["label"] as? String ?? "", confidence: d["confidence"] as? Double ?? -1,
                                                        box: [b["x"]!, b["y"]!, b["width"]!, b["height"]!]))
            }
            return (r, found)
        }
        let (ort, reference) = try objects(",runtime=onnxruntime")
        #expect(ort.exitCode == 0, "\(ort.stderr)")
        for (extra, score, pixels) in [(",runtime=openvino,precision=f32", 1e-3, 0.1), (",runtime=openvino", 0.03, 3.0), ("", 0.03, 3.0)] {
            let (r, found) = try objects(extra)
            #expect(r.exitCode == 0, "\(extra): \(r.stderr)")
            #expect(r.stderr.contains("OpenVINO (\(extra.hasSuffix("f32") ? "f32" : ""))") || (!extra.hasSuffix("f32") && r.stderr.contains("OpenVINO (")),
                    "\(r.stderr)")
            var compared = 0
            for (image, want) in reference {
                // A box at the threshold may be in one and not the other: those scored well above it must match.
                let sure = want.filter { $0.confidence >= 0.25 + score * 2 }
                let got = found[image] ?? []
                for w in sure {
                    let match = got.first { g in g.label == w.label && zip(g.box, w.box).allSatisfy { abs($0 - $1) <= pixels } }
                    #expect(match.map { abs($0.confidence - w.confidence) <= score } == true, "\(extra) \(image): \(w) in \(got)")
                    compared += 1
                }
            }
            #expect(compared >= 5, "\(extra): \(compared) objects compared")
        }
        // Without OpenVINO in the Python: refused, naming it and how to install it.
        let refused = try CVHostBinary.run(["run", "--plugin", "detect:model=\(Self.realModel),runtime=openvino", "--input", photos],
                                           environment: ["CVHOST_PYTHON": "/usr/bin/python3"])
        #expect(refused.exitCode == 16 && refused.stderr.contains("openvino"), "\(refused.stderr)")
    }

    @Test("a model OpenVINO cannot convert (an onnxruntime contrib op): by default it runs on onnxruntime, said in one line with OpenVINO's reason, its objects as the same model's without the op; runtime=openvino refuses it (exit 18)")
    func openVINOFallback() throws {
        let picture = try Self.picture("halves", halves: true)
        func objects(_ r: CommandResult) -> [String] {
            r.events("result").compactMap { e -> String? in
                guard let d = e["data"] as? [String: Any], let b = d["bounds"] as? [String: Double] else { return nil }
                return "\(d["label"] ?? "") \(["x", "y", "width", "height"].map { b[$0] ?? -1 })"
            }.sorted()
        }
        let fallback = try CVHostBinary.run(["run", "--plugin", "detect:model=\(Self.model("yolov8-unconverted"))", "--input", picture, "--metrics-interval", "0"],
                                            timeout: 120, environment: Self.python)
        #expect(fallback.exitCode == 0, "\(fallback.stderr)")
        let said = fallback.stderr.split(separator: "\n").filter { $0.contains("cannot be run by OpenVINO") }
        #expect(said.count == 1 && said[0].contains("No conversion rule found for operations: com.microsoft.MurmurHash3; it runs on onnxruntime"),
                "\(fallback.stderr)")
        let plain = try CVHostBinary.run(["run", "--plugin", "detect:model=\(Self.model("yolov8")),runtime=onnxruntime", "--input", picture, "--metrics-interval", "0"],
                                         timeout: 120, environment: Self.python)
        #expect(!objects(plain).isEmpty && objects(fallback) == objects(plain), "\(objects(fallback)) against \(objects(plain))")
        let refused = try CVHostBinary.run(["run", "--plugin", "detect:model=\(Self.model("yolov8-unconverted")),runtime=openvino", "--input", picture],
                                           timeout: 120, environment: Self.python)
        #expect(refused.exitCode == 18 && refused.stderr.contains("MurmurHash3 (runtime=onnxruntime runs it otherwise)"), "\(refused.stderr)")
    }

    @Test("found by name and listed with every option; `cvhost plugins` lists it beside the shared objects")
    func listed() throws {
        let r = try CVHostBinary.run(["plugins", "detect"], environment: Self.python)
        #expect(r.exitCode == 0, "\(r.stderr)")
        for option in ["model=", "type=auto", "labels=", "confidence=0.25", "iou=0.45", "agnostic=false", "max_detections=300", "classes=",
                       "size=", "resize=auto", "pad=114", "color=rgb", "mean=", "std=", "top_k=5", "classify=", "threads=0"] {
            #expect(r.stdout.contains("    " + option), "\(option)")
        }
        #expect(r.stdout.contains("[file]"))
        // Listed without onnxruntime: it is needed only to run.
        let all = try CVHostBinary.run(["plugins", "--json"], environment: ["CVHOST_PYTHON": "/usr/bin/python3"])
        #expect(all.exitCode == 0, "\(all.stderr)")
        let names = all.events("plugin").compactMap { $0["plugin"] as? String }
        #expect(names.contains("detect") && names.contains("barcode"), "\(names)")
    }
}
