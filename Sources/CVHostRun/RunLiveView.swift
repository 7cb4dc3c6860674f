import CVHostCore
import CVHostEvents
import CVHostEvidence
import CVHostHTTP
import CVHostLines
import CVHostOutput
import Foundation

/// The live view of a run: a preview output on every input's session, the event stream (a tap of
/// the outputs), the server, and what it asks of the run (`LiveViewService`: metrics, health,
/// controls through `LiveCommands`).
final class RunLiveView: LiveViewService {
    let events = EventStream()
    private let options: LiveViewSettings
    /// The evidence room, when the run keeps snapshots or clips: /clips and /snapshots.
    private let evidence = Locked<Evidence?>(nil)
    /// The event store, when the run keeps one: /history, and what each file of /clips and /snapshots is the evidence of.
    private let store = Locked<EventStore?>(nil)
    /// The address the lines give (--http-public-url, else the server's): the URLs /history gives.
    private let linesURL = Locked<String?>(nil)
    private let state = Locked<(server: HTTPServer?, inputs: RunInputs?, previews: [LivePreview], output: OutputRouter?, commands: LiveCommands?)>(
        (nil, nil, [], nil, nil))

    init(options: LiveViewSettings) {
        self.options = options
    }

    /// Adds a preview output to every input's session (before they start) and starts listening.
    /// - Throws: exit 6 when the address cannot be listened on.
    func start(inputs: RunInputs, output: OutputRouter, commands: LiveCommands, evidence: Evidence? = nil, eventStore: EventStore? = nil) throws {
        self.evidence.withLock { $0 = evidence }
        store.withLock { $0 = eventStore }
        let settings = HTTPServer.Settings(host: options.host, port: options.port, token: options.token, allowedHosts: options.answeredHosts)
        let previews = inputs.all.map(preview)
        state.withLock { $0 = (nil, inputs, previews, output, commands) }
        do {
            let server = try HTTPServer(settings, service: self, previews: previews, events: events)
            state.withLock { $0.server = server }
            // Addresses to open (not 0.0.0.0), and how a browser passes the token (never the token itself).
            Log.info("live view at \(server.browserURLs.joined(separator: ", "))"
                     + (options.token != nil ? " (open it with ?token=TOKEN at the end: the token in --http-token-file or $CVHOST_HTTP_TOKEN)" : ""))
        } catch {
            throw fail(error.description, code: ExitCodes.httpUnavailable)
        }
    }

    /// A preview output on an input's session (before it starts), showing the frames of the plugin
    /// whose boxes matter most: the tracked one, else the first.
    private func preview(of s: SourceRun) -> LivePreview {
        let p = LivePreview(source: s.id, settings: .init(maxFPS: options.previewFPS, maxWidth: options.previewWidth))
        s.session.beginConfiguration()
        try? s.session.addOutput(p.output)
        s.session.commitConfiguration()
        if let drawn = s.runners.first(where: { $0.tracked != nil }) ?? s.runners.first {
            drawn.subscribe(p)
        }
        return p
    }

    /// An input added while the run goes on (before its session starts): its picture is served too.
    func add(_ source: SourceRun) {
        let p = preview(of: source)
        let server = state.withLock { s -> HTTPServer? in
            s.previews.append(p)
            return s.server
        }
        server?.add(p)
    }

    /// An input removed: its picture is no longer served.
    func remove(_ source: SourceRun) {
        let server = state.withLock { s -> HTTPServer? in
            s.previews.removeAll { $0.source == source.id }
            return s.server
        }
        server?.removePreview(source: source.id)
    }

    /// Every input ended by itself: serve what is left until stopped or --http-linger passes.
    func linger(stop: RunStop) {
        guard let server = state.withLock({ $0.server }) else { return }
        let limit = options.linger
        if limit == 0 { return }
        Log.info("every input has ended; still serving \(server.url) (the last picture, results and metrics)"
                 + (limit.map { " for \(JSONObject.number($0, decimals: 1)) s" } ?? " until SIGINT/SIGTERM/SIGHUP"))
        let until = limit.map { HostClock.monotonicNs() + UInt64($0 * 1e9) }
        // Woken by the stop (a signal), or at the linger's end.
        let wake = ConditionLock()
        stop.whenRequested { wake.withLock { wake.broadcast() } }
        wake.withLock {
            while stop.requested == nil {
                guard let until else {
                    wake.wait()
                    continue
                }
                if HostClock.monotonicNs() >= until { break }
                wake.wait(untilMonotonicNs: until)
            }
        }
    }

    /// Stops the server and lets go of the run (the server's router holds this service: the
    /// cycle is cut here, or LeakSanitizer finds the whole run unreachable at exit).
    func stop() {
        let server = state.withLock { s -> HTTPServer? in
            defer { s = (nil, nil, [], nil, nil) }
            return s.server
        }
        evidence.withLock { $0 = nil }
        server?.stop()
    }

    /// The page's address, once the server listens (with the port the system chose for --http 0).
    var url: String? { state.withLock { $0.server }?.url }

    // MARK: - LiveViewService

    func metricsText() -> String {
        let (sources, previews, output, server) = state.withLock { ($0.inputs?.all ?? [], $0.previews, $0.output, $0.server) }
        guard let output else { return "" }
        var views: [String: (viewers: Int, encoded: UInt64)] = [:]
        for p in previews { views[p.source] = (p.viewerCount, p.encodedCount) }
        return RunMetrics.exposition(sources: sources, output: output, previews: views, eventClients: events.clientCount,
                                     server: server?.statistics, evidence: evidence.withLock { $0 }?.statistics)
    }

    func health() -> (healthy: Bool, json: String) {
        let sources = state.withLock { $0.inputs?.all ?? [] }
        var o = JSONObject()
        var states = JSONObject()
        var unhealthy: [String] = []
        for s in sources {
            states.set(s.id, RunMetrics.state(of: s))
            let h = InputHealth(s)
            if !h.healthy { unhealthy.append("\(s.id) (\(h.state.rawValue)\(h.stoppedBecause.map { ": " + $0 } ?? ""))") }
        }
        let healthy = !sources.isEmpty && unhealthy.isEmpty
        o.set("status", healthy ? "ok" : "unavailable")
        o.set("sources", object: states)
        // Which inputs are not streaming, and why: what a probe's log shows.
        o.set("unhealthy", strings: sources.isEmpty ? ["the run has no input"] : unhealthy)
        return (healthy, String(decoding: o.finished(), as: UTF8.self))
    }

    func evidenceList(_ kind: String, query: [String: String]) -> (status: Int, json: String)? {
        let store = store.withLock { $0 }
        return evidence.withLock { $0 }?.list(kind, query: query, events: store.map { s in { name in s.events(ofFile: name, kind: kind) } })
    }

    /// GET /fleet's answer, when the run is a fleet's node (HostRun.serveFleet).
    let fleetView = Locked<(@Sendable () -> (status: Int, json: String))?>(nil)

    func fleet() -> (status: Int, json: String)? {
        fleetView.withLock { $0 }?()
    }

    func history(query: [String: String]) -> (status: Int, json: String)? {
        guard let store = store.withLock({ $0 }) else { return nil }
        let q: EventQuery
        do {
            q = try EventQuery(query: query)
        } catch {
            var o = JSONObject()
            o.set("error", error.description)
            return (400, String(decoding: o.finished(), as: UTF8.self))
        }
        do {
            return (200, try store.answer(q, urlBase: linesURL.withLock { $0 } ?? url))
        } catch {
            var o = JSONObject()
            o.set("error", "the event store cannot answer: \(error)")
            return (500, String(decoding: o.finished(), as: UTF8.self))
        }
    }

    /// The address the lines give (--http-public-url, or the server's own), once known.
    func linesAddress(_ url: String?) {
        linesURL.withLock { $0 = url }
    }

    func evidenceFile(_ kind: String, name: String) -> ServedFile? {
        evidence.withLock { $0 }?.open(kind, name: name).map { ServedFile(descriptor: $0.descriptor, size: $0.size, contentType: $0.contentType) }
    }

    func controls() -> String {
        guard let commands = state.withLock({ $0.commands }) else { return "{}" }
        return String(decoding: commands.controls().finished(), as: UTF8.self)
    }

    func command(_ name: String, target: String?, body: [UInt8]) -> (status: Int, json: String) {
        guard let commands = state.withLock({ $0.commands }) else { return (503, "{}") }
        return Self.http(commands.handle(body, from: .http, implied: name, target: target))
    }

    func control(_ body: [UInt8]) -> (status: Int, json: String) {
        guard let commands = state.withLock({ $0.commands }) else { return (503, "{}") }
        return Self.http(commands.handle(body, from: .http))
    }

    /// A command's answer as HTTP says it: the status that says what it came to, the line as the body.
    static func http(_ answer: LiveCommands.Answer) -> (status: Int, json: String) {
        (answer.outcome.httpStatus, String(decoding: answer.line.finished(), as: UTF8.self))
    }
}

extension LiveCommands.Answer.Outcome {
    /// 200 done, 201 something added; 400 a bad request, 403 not this client's to ask, 404 no such
    /// target, 409 not possible now, 422 understood but not possible; 500 a bug.
    var httpStatus: Int {
        switch self {
        case .done(let created): created ? 201 : 200
        case .refused(.invalid): 400
        case .refused(.forbidden): 403
        case .refused(.notFound): 404
        case .refused(.conflict): 409
        case .refused(.unprocessable): 422
        case .failed: 500
        }
    }
}
