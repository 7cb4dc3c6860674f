import CVHostCore
import CVHostLines
import Foundation
import NIOCore

/// `GET /events`: the run's JSON lines as Server-Sent Events (`data: <line>`), the same lines as
/// stdout, for the page (or `curl -N`). A tap of the output router: it sees every line and never
/// waits (a client that falls behind is closed, and its EventSource connects again).
///
/// A client that connects late first gets what it needs to make sense of what follows, as it
/// stands: each input's session.started (its plugins and their options, the region of interest
/// among them), the latest metrics of each plugin, the results of each plugin's latest frame with
/// results, what each zone and line counts (the latest zone.occupancy and line.crossed of each
/// zone or line and label: they carry the running counts), and how each input stopped, if it has.
public final class EventStream: OutputSink {
    private let clients = StreamingClients()
    private let replay = Locked(Replay())

    /// The lines a new client is sent first, by what they stand for.
    private struct Replay {
        var order: [String] = []
        var lines: [String: [OutputLine]] = [:]
        /// The frame of the results kept, per source and plugin.
        var resultFrame: [String: UInt64] = [:]

        mutating func keep(_ line: OutputLine) {
            let r = line.route
            let who = "\(r.source ?? "")\u{0}\(r.plugin ?? "")"
            switch r.event {
            case "session.started":
                // A new start (a reconnected input) replaces everything of that input.
                for key in order where key.hasPrefix("\(r.source ?? "")\u{0}") { lines[key] = nil }
                order.removeAll { lines[$0] == nil }
                resultFrame = resultFrame.filter { !$0.key.hasPrefix("\(r.source ?? "")\u{0}") }
                set(who + "\u{0}started", [line])
            case "metrics":
                set(who + "\u{0}metrics", [line])
            case "result":
                let key = who + "\u{0}results"
                if let seq = line.sequence, resultFrame[who] == seq {
                    lines[key, default: []].append(line)
                } else {
                    resultFrame[who] = line.sequence
                    set(key, [line])
                }
            case "session.stopped", "session.interrupted", "session.interruption_ended", "session.error":
                set(who + "\u{0}state", [line])
            case "line.crossed", "zone.occupancy":
                // Rare lines (a crossing, a change of occupancy): read for which zone or line and label they count.
                guard let o = try? JSONSerialization.jsonObject(with: Data(line.bytes)) as? [String: Any],
                      let data = o["data"] as? [String: Any], let name = (data["line"] ?? data["zone"]) as? String,
                      let label = data["label"] as? String else { break }
                set("\(who)\u{0}\(r.event)\u{0}\(name)\u{0}\(label)", [line])
            default:
                break
            }
        }

        private mutating func set(_ key: String, _ value: [OutputLine]) {
            if lines[key] == nil { order.append(key) }
            lines[key] = value
        }

        var all: [OutputLine] { order.flatMap { lines[$0] ?? [] } }
    }

    public init() {}

    public var clientCount: Int { clients.count }

    public func write(_ line: OutputLine) {
        // Under the replay's lock: a client added meanwhile gets each line once, in order.
        replay.withLock { r in
            r.keep(line)
            if clients.count > 0 { clients.send(Self.event(line, allocator: ByteBufferAllocator())) }
        }
    }

    /// Adds a client whose response head is written: it gets the replay, then every line.
    func add(_ channel: Channel) {
        let client = StreamingClient(channel: channel, whenFull: .close)
        // Ask the browser to wait a second before it connects again after a close.
        replay.withLock { r in
            var buffer = channel.allocator.buffer(string: "retry: 1000\n\n")
            for line in r.all { buffer.writeImmutableBuffer(Self.event(line, allocator: channel.allocator)) }
            client.send(buffer)
            clients.add(client)
        }
    }

    func closeAll() { clients.closeAll() }

    /// One line as an event: `data: {...}` and a blank line (the line has no newline inside).
    static func event(_ line: OutputLine, allocator: ByteBufferAllocator) -> ByteBuffer {
        var b = allocator.buffer(capacity: line.bytes.count + 8)
        b.writeString("data: ")
        b.writeBytes(line.bytes.dropLast())
        b.writeString("\n\n")
        return b
    }
}
