import CVHostTestSupport
import Foundation
import Testing

/// What a new user meets first: the examples in `--help` and the README, one plugin's options,
/// output for shell scripts, and what became of each image of a folder.
@Suite("first contact")
struct FirstContactTests {
    static let folder = TestFolders.make("first-contact")
    static let root = PluginFixtures.packageRoot

    /// Every `--plugin SPEC` in a text (shell lines, `\` continuations, quotes stripped).
    static func pluginSpecs(in text: String) -> [String] {
        let words = text.replacingOccurrences(of: "\\\n", with: " ").split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)
        return zip(words, words.dropFirst()).compactMap { flag, value in
            flag == "--plugin" ? value.trimmingCharacters(in: CharacterSet(charactersIn: "'\"")) : nil
        }
    }

    @Test("every --plugin in cvhost --help, cvhost run --help, the README's and the guides' command lines is accepted as written")
    func examplePluginSpecs() throws {
        // The help's command lines (its prose names options too: "--plugin runs in a worker...").
        let helpText = try CVHostBinary.run(["--help"]).stdout + (try CVHostBinary.run(["run", "--help"]).stdout)
        var help = "", continued = false
        for line in helpText.split(separator: "\n") {
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.hasPrefix("cvhost run ") || continued { help += text + "\n" }
            continued = (text.hasPrefix("cvhost run ") || continued) && text.hasSuffix("\\")
        }
        // The README and the guides in docs/: their shell blocks only (their prose quotes options, not command lines).
        let guides = try FileManager.default.contentsOfDirectory(atPath: Self.root + "/docs").filter { $0.hasSuffix(".md") }.map { "docs/" + $0 }
        #expect(guides.count >= 10, "\(guides)")
        let texts = try (["README.md"] + guides).map { try String(contentsOfFile: Self.root + "/" + $0, encoding: .utf8) }
        let blocks = texts.flatMap { $0.components(separatedBy: "```sh").dropFirst().compactMap { $0.components(separatedBy: "```").first } }
        var specs = Set(Self.pluginSpecs(in: help) + blocks.flatMap { Self.pluginSpecs(in: $0) })
        // Files the README makes in its own steps (a plugin built from an example) are not here.
        specs = specs.filter { spec in
            let head = String(spec.prefix { $0 != ":" })
            return !head.contains("/") || FileManager.default.fileExists(atPath: Self.root + "/" + head)
        }
        #expect(specs.count >= 8, "\(specs.sorted())")
        for spec in specs.sorted() {
            // The detect plugin's commands name the user's model files: test models stand in for them, run by onnxruntime's Python.
            let detect = spec.hasPrefix("detect:")
            let r = try CVHostBinary.run(["run", "--plugin", spec, "--input", "testsrc:160x120:unpaced", "--max-frames", "2", "--metrics-interval", "0", "-q"],
                                         timeout: 60, environment: detect ? DetectPluginTests.python : ["CVHOST_PYTHON": "/usr/bin/python3"],
                                         inFolder: detect ? DetectPluginTests.readmeFiles : Self.root)
            #expect([0, 22].contains(r.exitCode), "--plugin \(spec): exit \(r.exitCode): \(r.stderr)")
        }
    }

    @Test("cvhost run --help's PLUGINS section names every plugin cvhost finds beside it")
    func helpListsEveryPlugin() throws {
        let help = try CVHostBinary.run(["run", "--help"]).stdout
        let section = try #require(help.components(separatedBy: "PLUGINS (--plugin").dropFirst().first?.components(separatedBy: "NAME is looked up").first)
        let named = Set(section.split(separator: "\n").compactMap { $0.trimmingCharacters(in: .whitespaces).split(separator: " ").first.map(String.init) })
        let found = try CVHostBinary.run(["plugins", "--json"]).stdout.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }.compactMap { $0["plugin"] as? String }
        #expect(found.count >= 5, "\(found)")
        for plugin in found { #expect(named.contains(plugin), "run --help's PLUGINS leaves out \(plugin)") }
    }

    /// GitHub's anchor of a heading: lower case, punctuation but `-` and `_` dropped, spaces as `-`.
    static func anchor(_ heading: String) -> String {
        String(heading.lowercased().unicodeScalars.filter { CharacterSet.alphanumerics.contains($0) || "-_ ".unicodeScalars.contains($0) }
            .map { $0 == " " ? "-" : Character($0) })
    }

    @Test("every link of the README and the guides in docs/ to a file of the repository or a section leads there")
    func guideLinks() throws {
        let guides = try FileManager.default.contentsOfDirectory(atPath: Self.root + "/docs").filter { $0.hasSuffix(".md") }.map { "docs/" + $0 }
        var headings: [String: Set<String>] = [:]
        func sections(_ file: String) throws -> Set<String> {
            if let known = headings[file] { return known }
            var found = Set<String>(), inBlock = false
            for line in try String(contentsOfFile: Self.root + "/" + file, encoding: .utf8).split(separator: "\n") {
                if line.hasPrefix("```") { inBlock.toggle() }
                if !inBlock, line.hasPrefix("#") { found.insert(Self.anchor(String(line.drop { $0 == "#" }.dropFirst()))) }
            }
            headings[file] = found
            return found
        }
        var links = 0
        for file in ["README.md", "CHANGELOG.md"] + guides {
            let text = try String(contentsOfFile: Self.root + "/" + file, encoding: .utf8)
            let folder = (file as NSString).deletingLastPathComponent
            for part in text.components(separatedBy: "](").dropFirst() {
                guard let end = part.firstIndex(of: ")") else { continue }
                let target = String(part[..<end])
                if target.hasPrefix("http://") || target.hasPrefix("https://") || target.contains(" ") { continue }
                links += 1
                let pieces = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
                let path = pieces[0].isEmpty ? file : ((folder as NSString).appendingPathComponent(pieces[0]) as NSString).standardizingPath
                #expect(FileManager.default.fileExists(atPath: Self.root + "/" + path), "\(file): a link to \(target): no \(path)")
                if pieces.count == 2, path.hasSuffix(".md"), FileManager.default.fileExists(atPath: Self.root + "/" + path) {
                    #expect(try sections(path).contains(pieces[1]), "\(file): a link to \(target): \(path) has no such section")
                }
            }
        }
        #expect(links >= 40)
    }

    @Test("the config file example of cvhost run --help runs (its plugins and keys as written; a test pattern for its inputs)")
    func helpConfigExample() throws {
        let help = try CVHostBinary.run(["run", "--help"]).stdout
        let section = try #require(help.components(separatedBy: "CONFIG FILE (--config FILE)").dropFirst().first)
        // The indented lines that follow the section's first sentence, up to the next paragraph.
        let lines = section.split(separator: "\n", omittingEmptySubsequences: false).drop { !$0.hasPrefix("  ") }.prefix { $0.hasPrefix("  ") }
        var yaml = lines.map { String($0.dropFirst(2)).components(separatedBy: "   #").first! }.joined(separator: "\n")
        #expect(yaml.contains("plugin:") && yaml.contains("barcode:symbologies="), "\(yaml)")
        // The camera it names is not here: its controls and --reconnect do not apply to the test
        // pattern that stands in for it (the command line's --input replaces the file's).
        yaml = yaml.split(separator: "\n").filter { !$0.hasPrefix("control:") && !$0.hasPrefix("reconnect:") }.joined(separator: "\n")
        let path = Self.folder + "/help-example.yaml"
        try yaml.write(toFile: path, atomically: true, encoding: .utf8)
        let r = try CVHostBinary.run(["run", "--config", path, "--input", "testsrc:160x120:unpaced", "--max-frames", "2", "--output", "-"],
                                     timeout: 60)
        #expect([0, 22].contains(r.exitCode), "\(yaml)\n\(r.stderr)")
    }

    @Test("cvhost plugins NAME shows one plugin, and the barcode plugin's symbologies option lists every name it accepts")
    func onePlugin() throws {
        let r = try CVHostBinary.run(["plugins", "barcode"])
        #expect(r.exitCode == 0)
        #expect(r.stdout.hasPrefix("barcode ") && !r.stdout.contains("\nface "))
        let refusal = try CVHostBinary.run(["run", "--plugin", "barcode:symbologies=zzz", "--input", "testsrc", "--max-frames", "1"])
        #expect(refusal.exitCode == 18)
        // "... known: qrcode, microqr, ...": each of them is in the option's help.
        let known = try #require(refusal.stderr.components(separatedBy: "known: ").dropFirst().first?.split(separator: "\n").first)
        let names = known.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: ")")) }
            .filter { $0 != "default" && $0 != "all" }
        #expect(names.count >= 20, "\(refusal.stderr)")
        let help = try #require(r.stdout.split(separator: "\n").first { $0.contains("symbologies=") })
        for name in names { #expect(help.contains(" \(name),") || help.contains(" \(name)*") || help.contains(" \(name);"), "\(name)") }
        let missing = try CVHostBinary.run(["plugins", "nosuch"])
        #expect(missing.exitCode == 10 && missing.stderr.contains("plugin 'nosuch' not found"))
    }

    @Test("--oneshot --field text prints the code alone; --results-only writes only result lines; files still get every line")
    func resultsForScripts() throws {
        let qr = Self.folder + "/qr.png"
        try Tool.check("qrencode", ["-o", qr, "-s", "6", "hello, world\nline two"])
        let text = try CVHostBinary.run(["run", "--plugin", "barcode", "--oneshot", "--field", "text", "--input", qr])
        #expect(text.exitCode == 0, "\(text.stderr)")
        #expect(text.stdout == "hello, world\\nline two\n")
        let file = Self.folder + "/all.jsonl"
        let only = try CVHostBinary.run(["run", "--plugin", "barcode", "--results-only", "--input", qr, "--output", "-", "--output", "file:\(file)"])
        #expect(only.exitCode == 0)
        #expect(only.lines.count == 1 && only.events("result").count == 1, "\(only.stdout)")
        let all = try String(contentsOfFile: file, encoding: .utf8)
        #expect(all.contains("\"event\":\"session.started\"") && all.contains("\"event\":\"session.stopped\""))
        // A value that is not a string is written as JSON; results without the field are skipped.
        let numbers = try CVHostBinary.run(["run", "--plugin", "motion:report=every,hold=0", "--field", "changed_fraction",
                                            "--input", try MediaFixtures.motionClip()])
        #expect(numbers.lines.count == 59 && numbers.lines.allSatisfy { Double($0) != nil }, "\(numbers.stdout.prefix(200))")
        // Nothing found: no line, exit 22.
        let none = try CVHostBinary.run(["run", "--plugin", "barcode", "--field", "text", "--input", "testsrc:160x120", "--max-frames", "2"])
        #expect(none.exitCode == 22 && none.stdout.isEmpty)
        // A field no result has (a typo): said, with the fields results had, and exit 22 as for nothing found.
        let typo = try CVHostBinary.run(["run", "--plugin", "barcode", "--field", "txt", "--input", qr])
        #expect(typo.exitCode == 22 && typo.stdout.isEmpty, "\(typo.stderr)")
        #expect(typo.stderr.contains("no result had a field 'txt' (--field)") && typo.stderr.contains("text"), "\(typo.stderr)")
        for (args, message) in [(["--field", ""], "--field ''"), (["--results-only", "--output", "file:\(Self.folder)/x.jsonl"], "add --output -")] {
            let r = try CVHostBinary.run(["run", "--plugin", "barcode", "--input", qr] + args)
            #expect(r.exitCode == 64 && r.stderr.contains(message), "\(args): \(r.stderr)")
        }
    }

    @Test("a folder of images: image.scanned names each image and what each plugin found in it, images with nothing too")
    func perImage() throws {
        let shots = Self.folder + "/shots"
        try FileManager.default.createDirectory(atPath: shots, withIntermediateDirectories: true)
        try Tool.check("qrencode", ["-o", shots + "/a-code.png", "-s", "6", "first"])
        try Tool.check("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "color=c=gray:s=160x120", "-frames:v", "1", shots + "/b-empty.png"])
        try Tool.check("qrencode", ["-o", shots + "/c-code.png", "-s", "6", "third"])
        let r = try CVHostBinary.run(["run", "--plugin", "barcode", "--input", shots, "--metrics-interval", "0"])
        #expect(r.exitCode == 0, "\(r.stderr)")
        let scanned = r.events("image.scanned")
        #expect(scanned.compactMap { ($0["image"] as? String).map { ($0 as NSString).lastPathComponent } } == ["a-code.png", "b-empty.png", "c-code.png"])
        #expect(scanned.compactMap { $0["results"] as? Int } == [1, 0, 1])
        #expect(scanned.allSatisfy { $0["failed"] as? Bool == false })
        // After each image's results.
        let order = r.events.compactMap { $0["event"] as? String }.filter { $0 == "result" || $0 == "image.scanned" }
        #expect(order == ["result", "image.scanned", "image.scanned", "result", "image.scanned"])
        #expect(try CVHostBinary.schemaProblems(r.stdout) == nil)
        // Results only: just the two codes.
        let short = try CVHostBinary.run(["run", "--plugin", "barcode", "--input", shots, "--field", "text"])
        #expect(short.stdout == "first\nthird\n")
    }
}

extension FirstContactTests {
    @Test("a C plugin's text made a JSON string by plugin.h's cvhost_json_escape reaches the output as it was")
    func jsonEscapeHelper() throws {
        let folder = PluginFixtures.makeFolder()
        try PluginFixtures.build(name: "escaped", defines: ["EMIT_ESCAPED"], in: folder)
        let r = try CVHostBinary.run(["run", "--plugin", folder + "/libcvhost-escaped.so", "--input", "testsrc:160x120", "--max-frames", "1"])
        #expect(r.exitCode == 0, "\(r.stderr)")
        let data = try #require(r.events("result").first?["data"] as? [String: Any])
        #expect(data["text"] as? String == "a \"quoted\" back\\slash\nnew line\ttab \u{01} café")
    }
}

extension FirstContactTests {
    @Test("a refused command line is one line in cvhost's style (cvhost: error: ...), as every other refusal, exit 64")
    func oneErrorStyle() throws {
        for args in [["run", "--plugin", "barcode", "--input", "testsrc", "--max-frame", "3"], ["run", "--input", "testsrc"],
                     ["run", "--plugin", "null", "--queue-depth", "0"], ["devices", "--nope"],
                     // Refused once the plugins are found: still one line, not a second empty one.
                     ["run", "--plugin", "null", "--input", "testsrc", "--track", "detect"],
                     ["run", "--plugin", "null", "--input", "testsrc", "--duration", "1x"]] {
            let r = try CVHostBinary.run(args)
            #expect(r.exitCode == 64, "\(args)")
            #expect(r.stderr.hasPrefix("cvhost: error: ") && r.stderr.split(separator: "\n").count == 1, "\(args): \(r.stderr)")
            #expect(!r.stderr.contains("Usage:") && !r.stderr.contains("Error: "), "\(args): \(r.stderr)")
        }
    }

    @Test("a new user's frictions: --duration 1s is one second; a zone's input= that is no input names its file and line; a missing CVHOST_PYTHON is exit 16")
    func frictions() throws {
        let r = try CVHostBinary.run(["run", "--plugin", "null:results=1", "--input", "testsrc:64x48@30", "--duration", "1s", "--metrics-interval", "0"])
        #expect(r.exitCode == 0 && r.events("session.stopped").first?["reason"] as? String == "duration", "\(r.stderr)")
        let path = Self.folder + "/zone-input.yaml"
        try "input: cam=testsrc\nplugin: [null]\ntrack: [null]\nzone:\n  - \"bay=0,0 10,0 10,10:input=gate\"\n".write(toFile: path, atomically: true, encoding: .utf8)
        let zone = try CVHostBinary.run(["run", "--config", path])
        #expect(zone.exitCode == 64 && zone.stderr.contains("\(path):5: zone: input=gate: this run has no input called gate (its inputs: cam"), "\(zone.stderr)")
        #expect(zone.stderr.split(separator: "\n").count == 1, "\(zone.stderr)")
        let python = try CVHostBinary.run(["run", "--plugin", Self.root + "/examples/python/brightness.py", "--input", "testsrc", "--max-frames", "1"],
                                          environment: ["CVHOST_PYTHON": "/nonexistent/python3"])
        #expect(python.exitCode == 16 && python.stderr.contains("CVHOST_PYTHON=/nonexistent/python3: no such program"), "\(python.stderr)")
    }

    @Test("a plugin option mistyped in a config file names the file, its line and the option meant (exit 17)")
    func pluginOptionTypoInConfig() throws {
        let path = Self.folder + "/typo.yaml"
        try "input: testsrc\nplugin:\n  - null\n  - barcode:symbologie=qrcode\nmax-frames: 1\n".write(toFile: path, atomically: true, encoding: .utf8)
        let r = try CVHostBinary.run(["run", "--config", path])
        #expect(r.exitCode == 17)
        #expect(r.stderr.contains("\(path):4: plugin: plugin barcode has no option 'symbologie' (did you mean 'symbologies'?)"), "\(r.stderr)")
        // Given on the command line, the same plugin is not the file's.
        let cli = try CVHostBinary.run(["run", "--config", path, "--plugin", "barcode:symbologie=qrcode"])
        #expect(cli.exitCode == 17 && !cli.stderr.contains("typo.yaml"), "\(cli.stderr)")
    }

    @Test("a text file named .png is said to be no image, not too large to decode")
    func textNamedPNG() throws {
        let path = Self.folder + "/notes.png"
        try "these are notes, not a picture\n".write(toFile: path, atomically: true, encoding: .utf8)
        let r = try CVHostBinary.run(["run", "--plugin", "barcode", "--input", path])
        #expect(r.exitCode == 3)
        #expect(r.stderr.contains("not an image: it does not begin like a PNG, JPEG"), "\(r.stderr)")
        #expect(!r.stderr.contains("16000"))
    }

    @Test("cvhost run --help: the tables' rows that wrap go on indented, never at column 0")
    func helpTables() throws {
        let help = try CVHostBinary.run(["run", "--help"]).stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        for (header, end) in [("INPUTS (", "Several --input"), ("LIVE VIEW AND CONTROL (", "With a token")] {
            let start = try #require(help.firstIndex { $0.hasPrefix(header) })
            let rows = help[(start + 1)...].prefix { !$0.hasPrefix(end) }.filter { $0.hasPrefix("  ") || !$0.hasPrefix("An HTTP") }
            for row in rows { #expect(row.hasPrefix("  "), "\(header): '\(row)'") }
        }
        #expect(help.allSatisfy { $0.count <= 80 })
    }
}

extension FirstContactTests {
    @Test("the live view's table has counts from the start, also with --metrics-interval 0, and 'Latest results' names the plugin once")
    func liveViewTable() throws {
        let port = freeLoopbackPort()
        var dom = ""
        let r = try CVHostBinary.run(["run", "--plugin", "null:results=1", "--input", "testsrc:160x120@10", "--http", "127.0.0.1:\(port)",
                                      "--metrics-interval", "0"], timeout: 90, withStdin: false) { run in
            guard run.waitForStderr("live view at"), run.wait(until: { $0.contains("\"event\":\"result\"") }) else { return }
            // The page's script runs for 5 s of the browser's time: its first reads of /metrics are in.
            dom = (try? Tool.run("chromium", ["--headless", "--no-sandbox", "--disable-gpu", "--timeout=20000", "--virtual-time-budget=5000",
                                              "--dump-dom", "http://127.0.0.1:\(port)/"]).output) ?? ""
            kill(run.pid, SIGTERM)
        }
        #expect(r.exitCode == 0, "\(r.stderr)")
        // The plugin's row: name, fps, processed, dropped, latency (no metrics line yet: its dash), button.
        let row = try #require(dom.components(separatedBy: "<tr data-plugin=\"null\">").dropFirst().first?.components(separatedBy: "</tr>").first,
                               "\(dom.suffix(3000))")
        let cells = row.components(separatedBy: "<td").dropFirst().map { $0.drop { $0 != ">" }.dropFirst().prefix { $0 != "<" } }
        #expect(cells.count >= 4 && Int(cells[2]) != nil && Int(cells[3]) != nil, "\(row)")
        #expect((Int(cells[2]) ?? 0) > 0, "frames processed: \(row)")
        let items = dom.components(separatedBy: "<li>").dropFirst().map { $0.prefix { $0 != "<" } }
        #expect(!items.isEmpty && items.allSatisfy { $0.hasPrefix("#") && $0.contains(" null: ") && !$0.contains("null null") }, "\(items.prefix(3))")
    }
}
