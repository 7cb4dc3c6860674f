import ArgumentParser
import CVHostCore
import CVHostHTTP
import CVHostOutput
import Foundation

/// `cvhost run --http …`: the options of the live view and control server.
struct HTTPOptions: ParsableArguments {
    @Option(name: .customLong("http"),
            help: ArgumentHelp("Serve the live view, /metrics and /controls over HTTP on [ADDR:]PORT (default address 127.0.0.1; 0: any free port). See LIVE VIEW AND CONTROL.",
                               valueName: "[addr:]port"))
    var http: String?

    @Option(name: .customLong("http-token-file"),
            help: ArgumentHelp("A file holding the token every route but /healthz then wants (else $CVHOST_HTTP_TOKEN); required to listen beyond loopback.",
                               valueName: "file"))
    var tokenFile: String?

    @Option(name: .customLong("http-allow-host"),
            help: ArgumentHelp("A name the server answers to besides localhost and IP addresses (a reverse proxy's, the machine's on the LAN); repeatable; * allows any. See LIVE VIEW AND CONTROL.",
                               valueName: "name"))
    var allowHosts: [String] = []

    @Option(name: .customLong("preview-fps"), help: ArgumentHelp("Live-view pictures per second at most, while someone watches.", valueName: "fps"))
    var previewFPS: Double = 5

    @Option(name: .customLong("preview-width"), help: ArgumentHelp("Live-view pictures are at most this wide.", valueName: "pixels"))
    var previewWidth: Int = 640

    @Option(name: .customLong("http-linger"),
            help: ArgumentHelp("When every input has ended by itself, keep serving (the last picture, results and metrics) this many seconds (default: until SIGINT/SIGTERM/SIGHUP or a stop command; 0: exit at once).",
                               valueName: "seconds"))
    var linger: Double?

    static let helpText = """
        LIVE VIEW AND CONTROL (--http [ADDR:]PORT)
        An HTTP server (127.0.0.1 unless an address is given; any other address wants a token):
          GET  /              the page: the picture with the plugins' results drawn over it
          GET  /stream.mjpg   the picture as MJPEG, ?source=ID (encoded only while watched,
                              at most --preview-fps, --preview-width wide)
          GET  /snapshot.jpg  the newest picture
          GET  /events        the JSON lines as Server-Sent Events
          GET  /metrics       Prometheus metrics
          GET  /controls      camera controls and plugins, with their values
          POST /controls      a change: {"name":"zoom_absolute","value":3} or
                              {"plugin":"barcode","enabled":false} or {"plugin":"face","max_fps":2}
          GET  /healthz       200 while frames flow, 503 otherwise (no token needed)
        With a token (--http-token-file or $CVHOST_HTTP_TOKEN), requests for data carry
        "Authorization: Bearer TOKEN" (a browser: ?token=TOKEN in the page's address).
        Web pages in your browser reach a loopback server too, so it answers only
        requests whose Host is localhost, an IP address, the --http name or an
        --http-allow-host name (else 421), and takes a POST only as
        application/json from its own page or a program (else 403 or 415).
        The same changes as JSON lines on stdin, answered by a command.result line:
          {"command":"set_control","name":"brightness","value":140}
          {"command":"set_plugin","plugin":"barcode","enabled":false}
          {"command":"get_controls"}   {"command":"stop"}
        Every change is a control.changed line. --no-stdin-commands leaves stdin alone.
        """

    var isEnabled: Bool { http != nil }

    /// ADDR:PORT as given (IPv6 in brackets), the address defaulting to loopback.
    func listenAddress() throws -> (host: String, port: Int) {
        guard let http else { throw ValidationError("--http is not given") }
        var host = "127.0.0.1"
        var portText = http
        if let colon = http.lastIndex(of: ":") {
            host = String(http[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
            portText = String(http[http.index(after: colon)...])
        }
        guard let port = Int(portText), (0...65535).contains(port), !host.isEmpty else {
            throw ValidationError("--http \(http): give a port (8080) or an address and a port (0.0.0.0:8080, [::1]:8080)")
        }
        return (host, port)
    }

    /// The token, from --http-token-file or $CVHOST_HTTP_TOKEN; nil when neither gives one.
    func token() throws -> String? {
        if let tokenFile {
            guard let text = try? String(contentsOfFile: tokenFile, encoding: .utf8) else {
                throw ValidationError("--http-token-file \(tokenFile): cannot read it")
            }
            let token = text.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !token.isEmpty else { throw ValidationError("--http-token-file \(tokenFile) is empty") }
            return token
        }
        if let env = ProcessInfo.processInfo.environment["CVHOST_HTTP_TOKEN"], !env.isEmpty { return env }
        return nil
    }

    func validate() throws {
        guard isEnabled else {
            if tokenFile != nil || linger != nil || !allowHosts.isEmpty {
                throw ValidationError("--http-token-file, --http-allow-host and --http-linger go with --http")
            }
            return
        }
        let (host, port) = try listenAddress()
        if let refusal = HTTPServer.Settings(host: host, port: port, token: try token()).refusal { throw ValidationError(refusal) }
        if let bad = allowHosts.first(where: { $0.isEmpty || $0.contains(where: { " /:@,".contains($0) }) && !$0.hasPrefix("[") }) {
            throw ValidationError("--http-allow-host '\(bad)': give a host name (cam.example), without a scheme, port or path")
        }
        if !(previewFPS > 0 && previewFPS <= 60) { throw ValidationError("--preview-fps must be more than 0 and at most 60") }
        if previewWidth < 16 || previewWidth > 7680 { throw ValidationError("--preview-width must be from 16 to 7680") }
        if let linger, linger < 0 || linger > RunCommand.maxSeconds || !linger.isFinite {
            throw ValidationError("--http-linger must be 0 or more seconds, and at most 1e9")
        }
    }
}

/// The live view of a run: a preview output on every input's session, the event stream (a tap of
/// the outputs), the server, and what it asks of the run (`LiveViewService`: metrics, health,
/// controls through `RunCommands`).
final class RunLiveView: LiveViewService {
    let events = EventStream()
    private let options: HTTPOptions
    private let state = Locked<(server: HTTPServer?, sources: [SourceRun], previews: [LivePreview], output: OutputRouter?, commands: RunCommands?)>(
        (nil, [], [], nil, nil))

    init(options: HTTPOptions) {
        self.options = options
    }

    /// Adds a preview output to every input's session (before they start) and starts listening.
    /// - Throws: exit 6 when the address cannot be listened on.
    func start(sources: [SourceRun], output: OutputRouter, commands: RunCommands) throws {
        let (host, port) = try options.listenAddress()
        let settings = HTTPServer.Settings(host: host, port: port, token: try options.token(), allowedHosts: options.allowHosts)
        let previews = sources.map { s in
            let p = LivePreview(source: s.id, settings: .init(maxFPS: options.previewFPS, maxWidth: options.previewWidth))
            s.session.beginConfiguration()
            try? s.session.addOutput(p.output)
            s.session.commitConfiguration()
            return p
        }
        state.withLock { $0 = (nil, sources, previews, output, commands) }
        do {
            let server = try HTTPServer(settings, service: self, previews: previews, events: events)
            state.withLock { $0.server = server }
            Log.info("live view at \(server.url)")
        } catch {
            throw fail(error.description, code: ExitCodes.httpUnavailable)
        }
    }

    /// Every input ended by itself: serve what is left until stopped or --http-linger passes.
    func linger(stop: RunStop) {
        guard let server = state.withLock({ $0.server }) else { return }
        let limit = options.linger
        if limit == 0 { return }
        Log.info("every input has ended; still serving \(server.url) (the last picture, results and metrics)"
                 + (limit.map { " for \(JSONObject.number($0, decimals: 1)) s" } ?? " until SIGINT/SIGTERM/SIGHUP"))
        let until = limit.map { HostClock.monotonicNs() + UInt64($0 * 1e9) }
        while stop.requested == nil {
            if let until, HostClock.monotonicNs() >= until { break }
            usleep(100_000)
        }
    }

    func stop() {
        state.withLock { $0.server }?.stop()
    }

    /// The page's address, once the server listens (with the port the system chose for --http 0).
    var url: String? { state.withLock { $0.server }?.url }

    // MARK: - LiveViewService

    func metricsText() -> String {
        let (sources, previews, output, server) = state.withLock { ($0.sources, $0.previews, $0.output, $0.server) }
        guard let output else { return "" }
        var views: [String: (viewers: Int, encoded: UInt64)] = [:]
        for p in previews { views[p.source] = (p.viewerCount, p.encodedCount) }
        return RunMetrics.exposition(sources: sources, output: output, previews: views, eventClients: events.clientCount,
                                     server: server?.statistics)
    }

    func health() -> (healthy: Bool, json: String) {
        let sources = state.withLock { $0.sources }
        var o = JSONObject()
        var states = JSONObject()
        var healthy = !sources.isEmpty
        for s in sources {
            let st = RunMetrics.state(of: s)
            states.set(s.id, st)
            if st != "running" { healthy = false }
        }
        o.set("status", healthy ? "ok" : "unavailable")
        o.set("sources", object: states)
        return (healthy, String(decoding: o.finished(), as: UTF8.self))
    }

    func controls() -> String {
        guard let commands = state.withLock({ $0.commands }) else { return "{}" }
        return String(decoding: commands.controls().finished(), as: UTF8.self)
    }

    func control(_ body: [UInt8]) -> (status: Int, json: String) {
        guard let commands = state.withLock({ $0.commands }) else { return (503, "{}") }
        let (status, line) = commands.handle(body, from: .http)
        return (status, String(decoding: line.finished(), as: UTF8.self))
    }
}
