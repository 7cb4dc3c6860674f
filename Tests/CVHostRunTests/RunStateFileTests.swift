import CVHostCore
import CVHostTestSupport
import Foundation
import Glibc
import Testing
@testable import CVHostRun

/// `--state FILE`: the changes made while running, kept and applied over the command line at the
/// next start, without a run.
@Suite("RunStateFile: changes kept for the next start")
struct RunStateFileTests {
    static let folder = TestFolders.make("state-file-unit")

    static func arguments() -> RunArguments {
        RunArguments(inputs: ["door=rtsp://cam/1", "yard=rtsp://cam/2", "clip.mp4"], devices: ["/dev/video0"],
                     tracks: ["detect:high=0.5"], zones: ["bay=0,0 1,0 1,1"], lines: ["gate=0.5,0 0.5,1"])
    }

    @Test("masks by name and filters by label and input (LABEL@INPUT) replace, remove and add as zones do; a file of an earlier cvhost, without them, is read")
    func masksAndFilters() throws {
        var c = RunStateFile.Contents()
        c.masks = ["tree": .some("tree=0,0 9,0 9,9"), "gone": nil]
        c.filters = ["person": .some("person:min_area=500"), "car@door": .some("car:min_score=0.7,input=door"), "bus": nil]
        var a = RunArguments(inputs: [], devices: [], tracks: [], zones: [], lines: [],
                             filters: ["person:min_area=100", "car:min_score=0.5,input=door", "car:min_score=0.4", "bus:max_area=0.5"],
                             masks: ["gone=0,0 1,0 1,1", "road=0,0 5,0 5,5"])
        c.apply(to: &a)
        #expect(a.masks == ["road=0,0 5,0 5,5", "tree=0,0 9,0 9,9"])
        #expect(a.filters == ["person:min_area=500", "car:min_score=0.7,input=door", "car:min_score=0.4"])
        let earlier = try JSONDecoder().decode(RunStateFile.Contents.self, from: Data(#"{"version":1,"inputs":{},"zones":{"bay":null}}"#.utf8))
        #expect(earlier.zones.count == 1 && earlier.zones["bay"] == .some(nil) && earlier.masks.isEmpty && earlier.filters.isEmpty && earlier.lines.isEmpty)
    }

    @Test("an entry replaces what has its name, null removes it, the others are added after (sorted by name)")
    func apply() {
        var c = RunStateFile.Contents()
        c.inputs = ["door": .some(.init(input: "rtsp://cam/9", device: nil, plugins: ["detect"])), "yard": nil,
                    "new": .some(.init(input: "testsrc", device: nil, plugins: nil)), "cam": .some(.init(input: nil, device: "/dev/video2", plugins: nil))]
        c.zones = ["bay": .some("bay=0,0 2,0 2,2"), "dock": .some("dock=0,0 1,0 0,1")]
        c.lines = ["gate": nil]
        c.tracks = ["detect": .some("detect:high=0.3"), "face": .some("face")]
        var a = Self.arguments()
        c.apply(to: &a)
        #expect(a.inputs == ["door=rtsp://cam/9", "clip.mp4", "new=testsrc"])
        #expect(a.devices == ["/dev/video0", "cam=/dev/video2"])
        #expect(a.inputPlugins == ["door": ["detect"]])
        #expect(a.zones == ["bay=0,0 2,0 2,2", "dock=0,0 1,0 0,1"])
        #expect(a.lines == [])
        #expect(a.tracks == ["detect:high=0.3", "face"])
    }

    @Test("an unnamed input is known by its text, a password in it as ***; a removal of what is not there changes nothing")
    func unnamed() {
        var c = RunStateFile.Contents()
        c.inputs = ["clip.mp4": nil, "rtsp://u:***@cam/3": nil, "gone": nil]
        var a = RunArguments(inputs: ["clip.mp4", "rtsp://u:secret@cam/3", "other.mp4"], devices: [], tracks: [], zones: [], lines: [])
        c.apply(to: &a)
        #expect(a.inputs == ["other.mp4"])
        var empty = RunArguments(inputs: [], devices: [], tracks: [], zones: [], lines: [])
        RunStateFile.Contents().apply(to: &empty)
        #expect(empty.inputs.isEmpty && empty.zones.isEmpty)
    }

    @Test("what is recorded is read back by the next start, from a file only its owner may read; a file that is not cvhost's state is refused, named")
    func roundTrip() throws {
        let path = Self.folder + "/state.json"
        unlink(path)
        let file = try RunStateFile(path: path)
        #expect(file.current == RunStateFile.Contents())
        file.record(input: "door", .init(input: "rtsp://cam/1", device: nil, plugins: nil))
        file.record(.zone, name: "bay", text: "bay=0,0 1,0 1,1")
        file.record(.line, name: "gate", text: nil)
        var info = stat()
        #expect(stat(path, &info) == 0 && info.st_mode & 0o077 == 0)
        let again = try RunStateFile(path: path)
        #expect(again.current == file.current)
        #expect(again.current.lines.keys.contains("gate") && again.current.lines["gate"]! == nil)
        try "{\"version\": 2}".write(toFile: path, atomically: false, encoding: .utf8)
        chmod(path, 0o600)
        #expect(throws: UsageError.self) { try RunStateFile(path: path) }
        try "not json".write(toFile: path, atomically: false, encoding: .utf8)
        do {
            _ = try RunStateFile(path: path)
            Issue.record("a file that is not JSON was read")
        } catch {
            #expect(error.description.contains("is not cvhost's state") && error.description.contains(path), "\(error)")
        }
    }
}
