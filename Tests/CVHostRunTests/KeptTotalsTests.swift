import CVHostAnalytics
import CVHostTestSupport
import Foundation
import Glibc
import Testing
@testable import CVHostRun

/// The counts kept beside the state file (`--state`): written and read again, what a damaged or
/// newer file does, which inputs' counts are kept, and the daily reset's time.
@Suite("KeptTotals: counts kept between runs")
struct KeptTotalsTests {
    static let door = LineSettings(name: "door", segment: Segment(Point(640, 100), Point(640, 600)))

    static func totals(_ n: Int) -> CountTotals {
        var t = CountTotals()
        t.lines["door"] = .init(Self.door, labels: ["person": .init(in: n, out: 1)])
        t.zones["bay"] = .init(ZoneSettings(name: "bay", polygon: Polygon([Point(0, 0), Point(10, 0), Point(10, 10)])), labels: ["car": .init(entered: n)])
        return t
    }

    static func state() throws -> RunStateFile {
        let folder = TestFolders.make("kept-totals")
        chmod(folder, 0o700)
        return try RunStateFile(path: folder + "/state.json")
    }

    @Test("written beside the state file (state.totals.json, 0600) and read again by the next run; an input the run no longer has is dropped")
    func roundTrip() throws {
        let state = try Self.state()
        let kept = KeptTotals(beside: state)
        #expect(kept.path.hasSuffix("/state.totals.json"))
        kept.update([("door", "detect", Self.totals(5)), ("yard", "detect", Self.totals(2))], sources: ["door", "yard"])
        kept.write()
        var info = stat()
        #expect(stat(kept.path, &info) == 0 && info.st_mode & 0o777 == 0o600)
        let again = KeptTotals(beside: state)
        #expect(again.totals(source: "door", plugin: "detect") == Self.totals(5) && again.totals(source: "yard", plugin: "detect") == Self.totals(2))
        again.update([], sources: ["door"])
        again.write()
        #expect(KeptTotals(beside: state).totals(source: "yard", plugin: "detect").isEmpty)
        #expect(KeptTotals(beside: state).totals(source: "door", plugin: "detect") == Self.totals(5))
    }

    @Test("counts set back: of one line only, of one input only, or all (with the time, kept)")
    func reset() throws {
        let kept = KeptTotals(beside: try Self.state())
        kept.update([("door", "detect", Self.totals(5)), ("yard", "detect", Self.totals(2))])
        kept.reset(source: "door", lines: ["door"], zones: nil)
        #expect(kept.totals(source: "door", plugin: "detect").lines.isEmpty && kept.totals(source: "door", plugin: "detect").zones.count == 1)
        #expect(kept.totals(source: "yard", plugin: "detect") == Self.totals(2))
        kept.reset(source: "yard", lines: nil, zones: nil)
        #expect(kept.totals(source: "yard", plugin: "detect").isEmpty)
        kept.reset(at: 1_800_000_000)
        #expect(kept.totals(source: "door", plugin: "detect").isEmpty && kept.lastReset == 1_800_000_000)
    }

    @Test("a damaged file is set aside (renamed .damaged-UNIX, said) and the counts start at 0; a newer cvhost's file is left as it is")
    func damagedAndNewer() throws {
        let state = try Self.state()
        let path = KeptTotals(beside: state).path
        try "{\"version\":1,\"inputs\":{\"door\":".write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o600)
        let kept = KeptTotals(beside: state)
        #expect(kept.totals(source: "door", plugin: "detect").isEmpty)
        let folder = (path as NSString).deletingLastPathComponent
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).contains { $0.hasPrefix("state.totals.json.damaged-") })
        let newer = "{\"version\":2,\"inputs\":[\"another shape\"]}"
        try newer.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o600)
        let left = KeptTotals(beside: state)
        left.update([("door", "detect", Self.totals(1))])
        left.write()
        #expect(try String(contentsOfFile: path, encoding: .utf8) == newer)
    }

    @Test("--reset-counts-at: HH:MM of a day, else refused; the last reset time at or before a moment, local")
    func dailyTime() throws {
        #expect(try DailyTime("00:00").description == "00:00" && DailyTime("23:59").hour == 23)
        for bad in ["24:00", "7:00", "07:60", "0700", "", "07:00:00", "٠٧:٠٠"] {
            #expect(throws: UsageError.self, "\(bad)") { try DailyTime(bad) }
        }
        var utc = Calendar(identifier: .gregorian)
        utc.timeZone = TimeZone(identifier: "UTC")!
        let six = try DailyTime("06:00")
        // 2026-12-04 05:00 UTC: the last 06:00 was the day before; at 07:00, that day's.
        let five = Date(timeIntervalSince1970: 1_796_360_400)
        #expect(six.latest(atOrBefore: five, calendar: utc) == Date(timeIntervalSince1970: 1_796_277_600))
        #expect(six.latest(atOrBefore: five.addingTimeInterval(7200), calendar: utc) == Date(timeIntervalSince1970: 1_796_364_000))
    }
}
