import CVHostCore
import CVHostLines
import Foundation

/// What the lines say of each input, kept on retained MQTT topics that a subscriber (Home
/// Assistant, a dashboard) reads the moment it connects, rather than waiting for the next event
/// (`counts=true` on an MQTT output; `discovery=homeassistant` implies it). A contract with
/// subscribers, beside the lines' own topics (docs/outputs.md):
///
///     PREFIX/HOST/SOURCE/status                "online" while the input runs; "offline" once it is
///                                              interrupted, has ended, or cvhost stopped
///     PREFIX/HOST/SOURCE/PLUGIN/lines/NAME     {"line":NAME,"in":N,"out":M,"labels":{"person":{"in":N,"out":M}}}
///     PREFIX/HOST/SOURCE/PLUGIN/zones/NAME     {"zone":NAME,"occupancy":N,"labels":{"person":N}}
///     PREFIX/HOST/SOURCE/snapshot_url          the newest snapshot's URL (with --http)
///     PREFIX/HOST/SOURCE/motion                "ON" from motion.started to motion.ended, else "OFF" (with --motion)
///
/// A line's or zone's topic names the tracked plugin, since two plugins tracked on one input (faces
/// and cars) each count their own crossings of a line of the same name. Topics appear when an input
/// starts (its lines and zones at 0) and change with `line.crossed` and `zone.occupancy`; an input,
/// line or zone removed has its topics emptied (a retained message deleted).
///
/// Made from every line the router writes, whatever the output's `events=`: each change is a
/// retained publication queued behind the line that caused it (`publication(topic:payload:)`), so
/// it reaches the broker in order, through the spool when there is one. Every value is whole (the
/// totals, not a difference), so a line published twice changes nothing.
public final class MQTTStateTopics: Sendable {
    /// The route event of a retained publication among the lines queued for an MQTT output: never
    /// an event of a line (they are names of letters and dots), never published as one.
    static let retainedEvent = "\u{1}retained"

    private let base: String
    private let discovery: HomeAssistantDiscovery?
    private let state = Locked(Sites())

    /// What is known of the inputs, by source.
    private struct Sites {
        var inputs: [String: InputState] = [:]
        /// The topics with a retained value now, and the value (`all` republishes them).
        var retained: [String: [UInt8]] = [:]
        var announced = false
    }

    typealias Publication = HomeAssistantDiscovery.Publication

    struct Counted: Hashable {
        let plugin: String
        let name: String
    }

    private struct InputState {
        var online = false
        /// The plugins tracked on it (session.started): where a line or zone added later counts.
        var tracked: Set<String> = []
        var lines: [Counted: LineCounts] = [:]
        var zones: [Counted: [String: Int]] = [:]
        var snapshotURL: String?
        /// Its motion (--motion: session.started says so); nil when cvhost does not look for it.
        var moving: Bool?
    }

    struct LineCounts: Equatable {
        var labels: [String: (in: Int, out: Int)] = [:]
        var totalIn = 0
        var totalOut = 0

        static func == (a: LineCounts, b: LineCounts) -> Bool {
            a.totalIn == b.totalIn && a.totalOut == b.totalOut && a.labels.mapValues { [$0.in, $0.out] } == b.labels.mapValues { [$0.in, $0.out] }
        }

        /// The counts a line of session.started's analytics starts from (`counts`: kept from a run
        /// before, with --state); 0 without.
        init(starting line: [String: Any] = [:]) {
            guard let counts = line["counts"] as? [String: Any] else { return }
            totalIn = counts["in"] as? Int ?? 0
            totalOut = counts["out"] as? Int ?? 0
            for (label, value) in counts["labels"] as? [String: Any] ?? [:] {
                guard let v = value as? [String: Any] else { continue }
                labels[label] = (v["in"] as? Int ?? 0, v["out"] as? Int ?? 0)
            }
        }
    }

    /// - Parameters:
    ///   - prefix: the output's topic prefix; `host` this machine's name, as the lines' topics have it.
    ///   - discoveryPrefix: where Home Assistant's discovery configs go (nil: none).
    public init(prefix: String, host: String = Producer.host, discoveryPrefix: String?) {
        base = prefix + "/" + MQTTTopics.level(host)
        discovery = discoveryPrefix.map { HomeAssistantDiscovery(prefix: $0, host: host, hostStatus: prefix + "/" + MQTTTopics.level(host) + "/status") }
    }

    /// A retained publication as a line queued for the MQTT output: its payload the bytes (empty:
    /// the retained message is deleted).
    static func publication(topic: String, payload: [UInt8]) -> OutputLine {
        OutputLine(bytes: payload + [UInt8(ascii: "\n")], route: .init(event: retainedEvent, source: topic, plugin: nil))
    }

    /// The topic of an input's level below PREFIX/HOST.
    private func topic(_ source: String, _ rest: String...) -> String {
        ([base, MQTTTopics.level(source)] + rest.map { MQTTTopics.level($0) }).joined(separator: "/")
    }

    /// What is published before any line: the host's own entity, when discovery is on.
    public func opening() -> [OutputLine] {
        state.withLock { s in
            s.announced = true
            return (discovery?.host(statusTopic: base + "/status") ?? []).map { keep($0, in: &s) }
        }
    }

    /// Every retained value now: published again when the connection comes back (a broker that
    /// restarted without its retained messages has them again).
    public func all() -> [OutputLine] {
        state.withLock { s in s.retained.sorted { $0.key < $1.key }.map { Self.publication(topic: $0.key, payload: $0.value) } }
    }

    /// The events that change a state (a set made once: every line the router writes is asked).
    private static let stateEvents: Set<String> = [
        "session.started", "session.stopped", "session.interrupted", "session.interruption_ended", "input.removed",
        "line.crossed", "zone.occupancy", "analytics.changed", "motion.started", "motion.ended",
    ]

    /// The retained publications a line brings about, in order (none for most lines).
    public func publications(after line: OutputLine) -> [OutputLine] {
        var out: [OutputLine] = []
        publish(after: line) { out.append($0) }
        return out
    }

    /// Hands `sink` the retained publications a line brings about, with the states' lock held: two
    /// writers' lines never put their states in the queue in the other order than they were made
    /// (the newest value is the one left retained). `sink` must not wait (a queue's push).
    public func publish(after line: OutputLine, to sink: (OutputLine) -> Void) {
        let event = line.route.event
        let interesting = Self.stateEvents.contains(event)
        let snapshot = Self.hasSnapshotURL(line.bytes)
        // A zone or line of no input (analytics.changed) is on every input; anything else is of one.
        guard interesting || snapshot, line.route.source != nil || event == "analytics.changed",
              let object = try? JSONSerialization.jsonObject(with: Data(line.bytes)) as? [String: Any] else { return }
        let data = object["data"] as? [String: Any] ?? object
        let source = line.route.source ?? ""
        state.withLock { s in
            var out: [Publication] = []
            switch event {
            case "session.started":
                // An input started anew (changed while running) counts from 0 the lines and zones it has now.
                let before = s.inputs[source]
                var input = InputState()
                input.snapshotURL = before?.snapshotURL
                input.online = true
                // Its lines from the counts they start from (kept from a run before: --state), its zones empty.
                for plugin in object["plugins"] as? [[String: Any]] ?? [] {
                    guard let name = plugin["plugin"] as? String, let analytics = plugin["analytics"] as? [String: Any] else { continue }
                    input.tracked.insert(name)
                    for l in analytics["lines"] as? [[String: Any]] ?? [] {
                        if let n = l["name"] as? String { input.lines[Counted(plugin: name, name: n)] = LineCounts(starting: l) }
                    }
                    for z in analytics["zones"] as? [[String: Any]] ?? [] {
                        if let n = z["name"] as? String { input.zones[Counted(plugin: name, name: n)] = [:] }
                    }
                }
                if let before {
                    out += removed(source, lines: before.lines.keys.filter { input.lines[$0] == nil },
                                   zones: before.zones.keys.filter { input.zones[$0] == nil })
                } else {
                    out += discovery?.input(source, statusTopic: topic(source, "status")) ?? []
                }
                out += self.appeared(source, input, since: before)
                // Its motion, when cvhost looks for it: none yet.
                if object["motion"] is [String: Any] {
                    input.moving = false
                    if before?.moving == nil { out += discovery?.motion(source, stateTopic: topic(source, "motion")) ?? [] }
                    out.append((topic(source, "motion"), Array("OFF".utf8)))
                } else if before?.moving != nil {
                    out.append((topic(source, "motion"), []))
                    out += discovery?.motionRemoved(source) ?? []
                }
                s.inputs[source] = input
                out.append((topic(source, "status"), Array("online".utf8)))
                out += input.lines.sorted(by: { Self.order($0.key, $1.key) }).map { key, counts in
                    (topic(source, key.plugin, "lines", key.name), Self.payload(line: key.name, counts))
                }
                out += input.zones.keys.sorted(by: Self.order).map { (topic(source, $0.plugin, "zones", $0.name), Self.payload(zone: $0.name, [:])) }
            case "session.stopped", "session.interrupted":
                guard s.inputs[source] != nil else { break }
                s.inputs[source]?.online = false
                out.append((topic(source, "status"), Array("offline".utf8)))
            case "session.interruption_ended":
                guard s.inputs[source] != nil else { break }
                s.inputs[source]?.online = true
                out.append((topic(source, "status"), Array("online".utf8)))
            case "input.removed":
                guard let input = s.inputs.removeValue(forKey: source) else { break }
                out += removed(source, lines: Array(input.lines.keys), zones: Array(input.zones.keys))
                out.append((topic(source, "status"), []))
                if input.snapshotURL != nil {
                    out.append((topic(source, "snapshot_url"), []))
                    out += discovery?.snapshotRemoved(source) ?? []
                }
                if input.moving != nil {
                    out.append((topic(source, "motion"), []))
                    out += discovery?.motionRemoved(source) ?? []
                }
                out += discovery?.inputRemoved(source) ?? []
            case "line.crossed":
                guard let plugin = line.route.plugin, let name = data["line"] as? String, let label = data["label"] as? String,
                      let inward = data["in"] as? Int, let outward = data["out"] as? Int,
                      let totalIn = data["total_in"] as? Int, let totalOut = data["total_out"] as? Int else { break }
                var input = s.inputs[source] ?? InputState()
                let key = Counted(plugin: plugin, name: name)
                if input.lines[key] == nil {
                    if s.inputs[source] == nil { out += discovery?.input(source, statusTopic: topic(source, "status")) ?? [] }
                    out += discovery?.line(source, key, stateTopic: topic(source, plugin, "lines", name)) ?? []
                }
                input.tracked.insert(plugin)
                var counts = input.lines[key] ?? LineCounts()
                counts.labels[label] = (inward, outward)
                (counts.totalIn, counts.totalOut) = (totalIn, totalOut)
                input.lines[key] = counts
                s.inputs[source] = input
                out.append((topic(source, plugin, "lines", name), Self.payload(line: name, counts)))
            case "zone.occupancy":
                guard let plugin = line.route.plugin, let name = data["zone"] as? String, let label = data["label"] as? String,
                      let count = data["count"] as? Int else { break }
                var input = s.inputs[source] ?? InputState()
                let key = Counted(plugin: plugin, name: name)
                if input.zones[key] == nil {
                    if s.inputs[source] == nil { out += discovery?.input(source, statusTopic: topic(source, "status")) ?? [] }
                    out += discovery?.zone(source, key, stateTopic: topic(source, plugin, "zones", name)) ?? []
                }
                input.tracked.insert(plugin)
                input.zones[key, default: [:]][label] = count
                s.inputs[source] = input
                out.append((topic(source, plugin, "zones", name), Self.payload(zone: name, input.zones[key]!)))
            case "analytics.changed":
                out += changed(object, source: line.route.source, in: &s)
            case "motion.started", "motion.ended":
                guard s.inputs[source]?.moving != nil else { break }
                let moving = event == "motion.started"
                s.inputs[source]?.moving = moving
                out.append((topic(source, "motion"), Array((moving ? "ON" : "OFF").utf8)))
            default: break
            }
            if snapshot, let url = object["snapshot_url"] as? String, var input = s.inputs[source] {
                if input.snapshotURL == nil { out += discovery?.snapshot(source, urlTopic: topic(source, "snapshot_url")) ?? [] }
                input.snapshotURL = url
                s.inputs[source] = input
                out.append((topic(source, "snapshot_url"), Array(url.utf8)))
            }
            for p in out { sink(keep(p, in: &s)) }
        }
    }

    /// A zone or line added, changed or removed while the run goes on (`analytics.changed`): on the
    /// input it names, or on every input when it names none; for each plugin tracked there.
    private func changed(_ object: [String: Any], source: String?, in s: inout Sites) -> [Publication] {
        guard let kind = object["kind"] as? String, kind == "line" || kind == "zone", let name = object["name"] as? String,
              let change = object["change"] as? String else { return [] }
        var out: [Publication] = []
        for (id, var input) in s.inputs.sorted(by: { $0.key < $1.key }) where source == nil || source == id {
            let keys = input.tracked.sorted().map { Counted(plugin: $0, name: name) }
            if change == "removed" {
                let gone = (kind == "line" ? Array(input.lines.keys) : Array(input.zones.keys)).filter { $0.name == name }
                out += removed(id, lines: kind == "line" ? gone : [], zones: kind == "zone" ? gone : [])
                for k in gone {
                    input.lines[k] = nil
                    input.zones[k] = nil
                }
                s.inputs[id] = input
                continue
            }
            // Added, or changed with its counts begun again ("reset"; "kept" leaves them); counts set
            // back to 0 (change "reset") zero a line's, and leave a zone's occupancy (who is inside now) as it is.
            if change == "reset" && kind == "zone" { continue }
            let reset = object["counts"] as? String != "kept"
            let before = input
            var states: [Publication] = []
            for k in keys {
                if kind == "line", input.lines[k] == nil || reset {
                    input.lines[k] = LineCounts()
                    states.append((topic(id, k.plugin, "lines", name), Self.payload(line: name, LineCounts())))
                } else if kind == "zone", input.zones[k] == nil || reset {
                    input.zones[k] = [:]
                    states.append((topic(id, k.plugin, "zones", name), Self.payload(zone: name, [:])))
                }
            }
            out += appeared(id, input, since: before) + states
            s.inputs[id] = input
        }
        return out
    }

    /// Discovery configs for the lines and zones of `input` that `before` did not have.
    private func appeared(_ source: String, _ input: InputState, since before: InputState?) -> [Publication] {
        guard let discovery else { return [] }
        var out: [Publication] = []
        for key in input.lines.keys.sorted(by: Self.order) where before?.lines[key] == nil {
            out += discovery.line(source, key, stateTopic: topic(source, key.plugin, "lines", key.name))
        }
        for key in input.zones.keys.sorted(by: Self.order) where before?.zones[key] == nil {
            out += discovery.zone(source, key, stateTopic: topic(source, key.plugin, "zones", key.name))
        }
        return out
    }

    /// Lines' and zones' states emptied, and their discovery configs.
    private func removed(_ source: String, lines: [Counted], zones: [Counted]) -> [Publication] {
        var out: [Publication] = []
        for key in lines.sorted(by: Self.order) {
            out += discovery?.lineRemoved(source, key) ?? []
            out.append((topic(source, key.plugin, "lines", key.name), []))
        }
        for key in zones.sorted(by: Self.order) {
            out += discovery?.zoneRemoved(source, key) ?? []
            out.append((topic(source, key.plugin, "zones", key.name), []))
        }
        return out
    }

    private static func order(_ a: Counted, _ b: Counted) -> Bool { (a.plugin, a.name) < (b.plugin, b.name) }

    /// Remembers what a topic holds now (nothing, once emptied) and makes its publication.
    private func keep(_ p: (topic: String, payload: [UInt8]), in s: inout Sites) -> OutputLine {
        s.retained[p.topic] = p.payload.isEmpty ? nil : p.payload
        return Self.publication(topic: p.topic, payload: p.payload)
    }

    static func payload(line name: String, _ c: LineCounts) -> [UInt8] {
        var o = JSONObject()
        o.set("line", name)
        o.set("in", c.totalIn)
        o.set("out", c.totalOut)
        var labels = JSONObject()
        for (label, n) in c.labels.sorted(by: { $0.key < $1.key }) {
            var l = JSONObject()
            l.set("in", n.in)
            l.set("out", n.out)
            labels.set(label, object: l)
        }
        o.set("labels", object: labels)
        return o.finished()
    }

    static func payload(zone name: String, _ occupancy: [String: Int]) -> [UInt8] {
        var o = JSONObject()
        o.set("zone", name)
        o.set("occupancy", occupancy.values.reduce(0, +))
        var labels = JSONObject()
        for (label, n) in occupancy.sorted(by: { $0.key < $1.key }) { labels.set(label, n) }
        o.set("labels", object: labels)
        return o.finished()
    }

    /// Whether the line's envelope has `"snapshot_url":` (looked for in the bytes, so that the lines
    /// without one are not parsed).
    private static let snapshotKey = Array("\"snapshot_url\":".utf8)

    static func hasSnapshotURL(_ bytes: [UInt8]) -> Bool {
        let needle = Self.snapshotKey, n = needle.count
        guard bytes.count >= n else { return false }
        for i in 0...(bytes.count - n) where bytes[i] == needle[0] && bytes[i..<(i + n)].elementsEqual(needle) { return true }
        return false
    }
}
