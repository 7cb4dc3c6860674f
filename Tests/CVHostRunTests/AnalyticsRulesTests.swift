import CVHostAnalytics
import Testing
@testable import CVHostRun

/// The run's analytics changed while it goes on (AnalyticsRules): what each change does to the
/// settings and to every runner's slot, and each refusal with its status. No run, no frame: the
/// slots are looked at directly.
@Suite("AnalyticsRules")
struct AnalyticsRulesTests {
    static let plugins = ["walker", "barcode"], inputs = ["a", "b"]

    /// Rules following the walker's boxes on inputs a and b, and the slots of walker and barcode on each.
    static func rules(track: [String] = ["walker"]) throws -> (AnalyticsRules, a: TrackingSlot, b: TrackingSlot, barcode: TrackingSlot) {
        let rules = AnalyticsRules(try AnalyticsSettings(track: track, zones: [], lines: [], inputs: inputs))
        let a = rules.stage(plugin: "walker", index: 0, source: "a", live: false, confidence: nil)
        let b = rules.stage(plugin: "walker", index: 0, source: "b", live: false, confidence: nil)
        let barcode = rules.stage(plugin: "barcode", index: 1, source: "a", live: false, confidence: nil)
        return (rules, a, b, barcode)
    }

    static func zone(_ text: String) throws -> AnalyticsRules.Change {
        let z = try AnalyticsSpec.zone(text)
        return .zone(name: z.name, z)
    }

    static func status(_ body: () throws -> Void) -> Int? {
        do {
            try body()
            return nil
        } catch let refusal as CommandRefusal {
            return LiveCommands.Answer.Outcome.refused(refusal.kind).httpStatus
        } catch {
            return -1
        }
    }

    @Test("a zone added (on every input, or one), changed in place (the same shape keeps its counts, a move resets them), removed: in every slot that follows boxes")
    func zones() throws {
        let (rules, a, b, barcode) = try Self.rules()
        let added = try rules.apply(try Self.zone("z=0,0 10,0 10,10 0,10"), plugins: Self.plugins, inputs: Self.inputs)
        #expect(added.change == "added" && added.counts == "reset")
        #expect(a.tracked?.analytics.zones.map(\.name) == ["z"] && b.tracked?.analytics.zones.map(\.name) == ["z"] && barcode.tracked == nil)
        _ = try rules.apply(try Self.zone("y=0,0 5,0 5,5 0,5:input=a"), plugins: Self.plugins, inputs: Self.inputs)
        #expect(a.tracked?.analytics.zones.map(\.name) == ["z", "y"] && b.tracked?.analytics.zones.map(\.name) == ["z"])
        let dwell = try rules.apply(try Self.zone("z=0,0 10,0 10,10 0,10:dwell=5"), plugins: Self.plugins, inputs: Self.inputs)
        #expect(dwell.change == "changed" && dwell.counts == "kept")
        let moved = try rules.apply(try Self.zone("z=1,1 10,0 10,10 0,10"), plugins: Self.plugins, inputs: Self.inputs)
        #expect(moved.change == "changed" && moved.counts == "reset")
        let removed = try rules.apply(.zone(name: "z", nil), plugins: Self.plugins, inputs: Self.inputs)
        #expect(removed.change == "removed" && removed.counts == nil)
        #expect(a.tracked?.analytics.zones.map(\.name) == ["y"] && b.tracked?.analytics.zones.isEmpty == true)
        #expect(rules.settings.zones.map(\.name) == ["y"])
    }

    @Test("a track changed gives its slots a new stage (its zones' and lines' counts kept); removed once no zone or line needs it, its slots follow nothing")
    func tracks() throws {
        let (rules, a, _, barcode) = try Self.rules()
        let before = try #require(a.tracked)
        let changed = try rules.apply(.track(plugin: "walker", try AnalyticsSpec.tracked("walker:high=0.5")), plugins: Self.plugins, inputs: Self.inputs)
        #expect(changed.change == "changed" && changed.counts == "kept" && a.tracked !== before && a.tracked != nil)
        let added = try rules.apply(.track(plugin: "barcode", try AnalyticsSpec.tracked("barcode")), plugins: Self.plugins, inputs: Self.inputs)
        #expect(added.change == "added" && barcode.tracked != nil)
        _ = try rules.apply(.track(plugin: "walker", nil), plugins: Self.plugins, inputs: Self.inputs)
        #expect(a.tracked == nil && barcode.tracked != nil && rules.settings.tracked.map(\.plugin) == ["barcode"])
    }

    @Test("refusals, each with its status: 404 what is not there, 422 an input or plugin the run lacks, 409 zones with no track, the most zones, the last track under zones")
    func refusals() throws {
        let (rules, _, _, _) = try Self.rules()
        #expect(Self.status { _ = try rules.apply(.zone(name: "none", nil), plugins: Self.plugins, inputs: Self.inputs) } == 404)
        #expect(Self.status { _ = try rules.apply(.line(name: "none", nil), plugins: Self.plugins, inputs: Self.inputs) } == 404)
        #expect(Self.status { _ = try rules.apply(.track(plugin: "barcode", nil), plugins: Self.plugins, inputs: Self.inputs) } == 404)
        #expect(Self.status { _ = try rules.apply(try Self.zone("z=0,0 1,0 1,1:input=c"), plugins: Self.plugins, inputs: Self.inputs) } == 422)
        #expect(Self.status { _ = try rules.apply(.track(plugin: "face", try AnalyticsSpec.tracked("face")), plugins: Self.plugins, inputs: Self.inputs) } == 422)
        let (untracked, _, _, _) = try Self.rules(track: [])
        #expect(Self.status { _ = try untracked.apply(try Self.zone("z=0,0 1,0 1,1"), plugins: Self.plugins, inputs: Self.inputs) } == 409)
        for i in 0..<AnalyticsSettings.most {
            _ = try rules.apply(try Self.zone("z\(i)=0,0 1,0 1,1"), plugins: Self.plugins, inputs: Self.inputs)
        }
        #expect(Self.status { _ = try rules.apply(try Self.zone("one-more=0,0 1,0 1,1"), plugins: Self.plugins, inputs: Self.inputs) } == 409)
        #expect(Self.status { _ = try rules.apply(.track(plugin: "walker", nil), plugins: Self.plugins, inputs: Self.inputs) } == 409)
        // What was refused changed nothing.
        #expect(rules.settings.zones.count == AnalyticsSettings.most && rules.settings.tracked.map(\.plugin) == ["walker"])
    }

    @Test("with --motion, a mask needs no track (it keeps motion out too), and stays when the last track goes; without it, a mask with no track is refused (409)")
    func masksForMotion() throws {
        let mask = try AnalyticsSpec.mask("tree=0,0 10,0 10,10")
        let motion = AnalyticsRules(try AnalyticsSettings(track: [], zones: [], lines: [], inputs: Self.inputs), motion: true)
        #expect(try motion.apply(.mask(name: "tree", mask), plugins: Self.plugins, inputs: Self.inputs).change == "added")
        #expect(motion.settings.masks == [mask])
        let tracked = AnalyticsRules(try AnalyticsSettings(track: ["walker"], zones: [], lines: [], inputs: Self.inputs), motion: true)
        _ = try tracked.apply(.mask(name: "tree", mask), plugins: Self.plugins, inputs: Self.inputs)
        #expect(try tracked.apply(.track(plugin: "walker", nil), plugins: Self.plugins, inputs: Self.inputs).change == "removed")
        let without = AnalyticsRules(try AnalyticsSettings(track: [], zones: [], lines: [], inputs: Self.inputs))
        #expect(Self.status { _ = try without.apply(.mask(name: "tree", mask), plugins: Self.plugins, inputs: Self.inputs) } == 409)
    }
}
