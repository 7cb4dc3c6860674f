import CVHostAnalytics
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
        RunArguments(inputs: ["door=rtsp://cam/1", "yard=rtsp://cam/2", "clip.mp4"], devices: ["/dev/video0"])
    }

    static func rules(track: [String] = [], zones: [String] = [], lines: [String] = [], filters: [String] = [], masks: [String] = []) throws -> AnalyticsSettings {
        var a = AnalyticsSettings()
        a.tracked = try track.map(AnalyticsSpec.tracked)
        a.zones = try zones.map(AnalyticsSpec.zone)
        a.lines = try lines.map(AnalyticsSpec.line)
        a.filters = try filters.map(AnalyticsSpec.filter)
        a.masks = try masks.map(AnalyticsSpec.mask)
        return a
    }

    @Test("masks by name and filters by label and input (LABEL@INPUT) replace, remove and add as zones do; a file of an earlier cvhost, without them, is read")
    func masksAndFilters() throws {
        var c = RunStateFile.Contents()
        c.masks = ["tree": .some(try AnalyticsSpec.mask("tree=0,0 9,0 9,9")), "gone": nil]
        c.filters = ["person": .some(try AnalyticsSpec.filter("person:min_area=500")), "car@door": .some(try AnalyticsSpec.filter("car:min_score=0.7,input=door")),
                     "bus": nil]
        var a = try Self.rules(filters: ["person:min_area=100", "car:min_score=0.5,input=door", "car:min_score=0.4", "bus:max_area=0.5"],
                               masks: ["gone=0,0 1,0 1,1", "road=0,0 5,0 5,5"])
        c.apply(to: &a)
        #expect(a.masks == (try Self.rules(masks: ["road=0,0 5,0 5,5", "tree=0,0 9,0 9,9"])).masks)
        #expect(a.filters == (try Self.rules(filters: ["person:min_area=500", "car:min_score=0.7,input=door", "car:min_score=0.4"])).filters)
        let earlier = try JSONDecoder().decode(RunStateFile.Contents.self, from: Data(#"{"version":1,"inputs":{},"zones":{"bay":null}}"#.utf8))
        #expect(earlier.zones.count == 1 && earlier.zones["bay"] == .some(nil) && earlier.masks.isEmpty && earlier.filters.isEmpty && earlier.lines.isEmpty)
    }

    @Test("an entry replaces what has its name, null removes it, the others are added after (sorted by name)")
    func apply() throws {
        var c = RunStateFile.Contents()
        c.inputs = ["door": .some(.init(input: "rtsp://cam/9", device: nil, plugins: ["detect"])), "yard": nil,
                    "new": .some(.init(input: "testsrc", device: nil, plugins: nil)), "cam": .some(.init(input: nil, device: "/dev/video2", plugins: nil))]
        c.zones = ["bay": .some(try AnalyticsSpec.zone("bay=0,0 2,0 2,2")), "dock": .some(try AnalyticsSpec.zone("dock=0,0 1,0 0,1"))]
        c.lines = ["gate": nil]
        c.tracks = ["detect": .some(try AnalyticsSpec.tracked("detect:high=0.3")), "face": .some(try AnalyticsSpec.tracked("face"))]
        var a = Self.arguments()
        c.apply(to: &a)
        #expect(a.inputs == ["door=rtsp://cam/9", "clip.mp4", "new=testsrc"])
        #expect(a.devices == ["/dev/video0", "cam=/dev/video2"])
        #expect(a.inputPlugins == ["door": ["detect"]])
        var r = try Self.rules(track: ["detect:high=0.5"], zones: ["bay=0,0 1,0 1,1"], lines: ["gate=0.5,0 0.5,1"])
        c.apply(to: &r)
        #expect(r.zones == (try Self.rules(zones: ["bay=0,0 2,0 2,2", "dock=0,0 1,0 0,1"])).zones)
        #expect(r.lines.isEmpty)
        #expect(r.tracked == (try Self.rules(track: ["detect:high=0.3", "face"])).tracked)
    }

    @Test("a file of version 1 (rules as the flags' text) is read as version 2 (rules in their JSON); one of a later version is refused, named")
    func versions() throws {
        let v1 = #"{"version":1,"inputs":{},"zones":{"bay":"bay=0,0 1,0 1,1:dwell=30"},"tracks":{"detect":"detect:high=0.5"},"#
            + #""filters":{"car@door":"car:min_score=0.6,input=door"},"lines":{"gate":null}}"#
        let read = try JSONDecoder().decode(RunStateFile.Contents.self, from: Data(v1.utf8))
        #expect(read.version == 2)
        #expect(read.zones["bay"]! == (try AnalyticsSpec.zone("bay=0,0 1,0 1,1:dwell=30")))
        #expect(read.tracks["detect"]! == (try AnalyticsSpec.tracked("detect:high=0.5")))
        #expect(read.filters["car@door"]! == (try AnalyticsSpec.filter("car:min_score=0.6,input=door")))
        let written = try JSONEncoder().encode(read)
        let object = try #require(try JSONSerialization.jsonObject(with: written) as? [String: Any])
        let bay = try #require((object["zones"] as? [String: Any])?["bay"] as? [String: Any])
        #expect(object["version"] as? Int == 2 && bay["dwell"] as? Double == 30 && (bay["points"] as? [[Double]])?.count == 3)
        #expect(try JSONDecoder().decode(RunStateFile.Contents.self, from: written) == read)
        #expect(throws: RunStateFile.VersionProblem.self) {
            try JSONDecoder().decode(RunStateFile.Contents.self, from: Data(#"{"version":3,"inputs":{}}"#.utf8))
        }
    }

    @Test("an unnamed input is known by its text, a password in it as ***; a removal of what is not there changes nothing")
    func unnamed() {
        var c = RunStateFile.Contents()
        c.inputs = ["clip.mp4": nil, "rtsp://u:***@cam/3": nil, "gone": nil]
        var a = RunArguments(inputs: ["clip.mp4", "rtsp://u:secret@cam/3", "other.mp4"], devices: [])
        c.apply(to: &a)
        #expect(a.inputs == ["other.mp4"])
        var empty = RunArguments(inputs: [], devices: [])
        RunStateFile.Contents().apply(to: &empty)
        #expect(empty.inputs.isEmpty && empty.devices.isEmpty)
    }

    @Test("what is recorded is read back by the next start, from a file only its owner may read; a file that is not cvhost's state is refused, named")
    func roundTrip() throws {
        let bay = try AnalyticsSpec.zone("bay=0,0 1,0 1,1")
        let path = Self.folder + "/state.json"
        unlink(path)
        let file = try RunStateFile(path: path)
        #expect(file.current == RunStateFile.Contents())
        file.record(input: "door", .init(input: "rtsp://cam/1", device: nil, plugins: nil))
        file.record(.zone(name: "bay", bay))
        file.record(.line(name: "gate", nil))
        var info = stat()
        #expect(stat(path, &info) == 0 && info.st_mode & 0o077 == 0)
        let again = try RunStateFile(path: path)
        #expect(again.current == file.current)
        #expect(again.current.lines.keys.contains("gate") && again.current.lines["gate"]! == nil)
        #expect(again.current.zones["bay"]! == bay)
        try "{\"version\": 3}".write(toFile: path, atomically: false, encoding: .utf8)
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
