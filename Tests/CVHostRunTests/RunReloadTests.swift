import CVHostAnalytics
import CVHostTestSupport
import Testing
@testable import CVHostRun

/// A reload's plan: the steps from what runs to what the config file says now, in their order,
/// without a run.
@Suite("RunReload: the steps of a reload")
struct RunReloadTests {
    static func settings(inputs: [String], track: [String] = [], zones: [String] = [], lines: [String] = [], filters: [String] = [],
                         masks: [String] = []) throws -> RunSettings {
        var s = try RunSettings(plugins: ["null", "motion"], inputs: inputs, environment: [:])
        s.analytics = try AnalyticsSettings(track: track, zones: zones, lines: lines, filters: filters, masks: masks)
        return s
    }

    static func running(_ s: RunSettings, plugins: [String] = ["null", "motion"]) -> [RunReload.RunningInput] {
        s.inputs.map { RunReload.RunningInput(id: $0.sourceID(), spec: $0, plugins: plugins) }
    }

    @Test("the same settings: nothing to do")
    func nothing() throws {
        let s = try Self.settings(inputs: ["door=testsrc", "yard=testsrc:320x240"], track: ["null"], zones: ["bay=0,0 1,0 1,1"])
        #expect(RunReload.plan(s, running: Self.running(s), allPlugins: ["null", "motion"], now: s.analytics).isEmpty)
    }

    @Test("inputs: one gone is removed first, a new one added, one that reads something else or has other plugins opened anew; one unchanged left alone")
    func inputs() throws {
        let now = try Self.settings(inputs: ["door=testsrc", "yard=testsrc:320x240", "gate=testsrc:160x120", "dock=testsrc"])
        var next = try Self.settings(inputs: ["door=testsrc", "yard=testsrc:640x480", "gate=testsrc:160x120", "new=testsrc"])
        next.keep(nil, inputPlugins: ["gate": ["motion"]])
        let steps = RunReload.plan(next, running: Self.running(now), allPlugins: ["null", "motion"], now: now.analytics)
        #expect(steps.map(\.description) == ["remove input dock", "change input yard", "change input gate", "add input new"], "\(steps)")
        if case .changeInput(_, let plugins) = steps[2] { #expect(plugins == ["motion"]) } else { Issue.record("\(steps[2])") }
    }

    @Test("analytics: a new track first, zones, lines, masks and filters removed then set (a zone changed only in its dwell is set again), the tracks no longer followed last")
    func analytics() throws {
        let now = try Self.settings(inputs: ["door=testsrc"], track: ["null"], zones: ["bay=0,0 1,0 1,1", "old=0,0 1,0 0,1"],
                                    lines: ["gate=0,0 1,1"], filters: ["person:min_area=100"], masks: ["tree=0,0 1,0 1,1"])
        let next = try Self.settings(inputs: ["door=testsrc"], track: ["motion"], zones: ["bay=0,0 1,0 1,1:dwell=30"],
                                     lines: ["gate=0,0 1,1", "exit=0,1 1,0"], filters: ["person:min_area=200", "*:min_score=0.5"],
                                     masks: [])
        let steps = RunReload.plan(next, running: Self.running(now), allPlugins: ["null", "motion"], now: now.analytics)
        #expect(steps.map(\.description) == ["set track motion", "remove zone old", "set zone bay", "set line exit", "remove mask tree",
                                             "set filter person", "set filter *", "remove track null"], "\(steps.map(\.description))")
        // A filter is named by its label and input: one of another input is another filter.
        let perInput = try Self.settings(inputs: ["door=testsrc"], track: ["null"], filters: ["person:min_area=100", "person:min_area=50,input=door"])
        let added = RunReload.plan(perInput, running: Self.running(now), allPlugins: ["null", "motion"], now: now.analytics)
        #expect(added.filter { $0.description.hasSuffix("filter person") }.count == 1, "\(added.map(\.description))")
    }
}
