import ArgumentParser
import CVHostRun

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

    @Option(name: .customLong("http-public-url"),
            help: ArgumentHelp("The address other machines open the server at (http://cam-host.lan:8080, or a reverse proxy's https://example.org/cvhost): every snapshot_url, clip url and session.started's http start with it; its host is answered as an --http-allow-host.",
                               valueName: "url"))
    var publicURL: String?

    @Option(name: .customLong("allow-inputs"),
            help: ArgumentHelp("What an input added over HTTP (POST /inputs, PUT /inputs/NAME) may name, +-separated: network (streams cvhost connects to; the default), files, devices, listen (a URL that makes cvhost listen on a port), all, or folders (/srv/clips) files may come from. The command line, config and stdin take anything.",
                               valueName: "kinds"))
    var allowInputs: String?

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
        An HTTP server (127.0.0.1 unless an address is given; any other wants a token):
          GET  /              the page: the picture with the plugins' results on it
          GET  /stream.mjpg   the picture as MJPEG, ?source=ID (encoded only while
                              watched, at most --preview-fps, --preview-width wide)
          GET  /snapshot.jpg  the newest picture
          GET  /events        the JSON lines as Server-Sent Events
          GET  /metrics       Prometheus metrics
          GET  /controls      camera controls and plugins, with their values
          POST /controls      a change: {"name":"zoom_absolute","value":3} or
                              {"plugin":"barcode","enabled":false} or
                              {"plugin":"face","max_fps":2} or
                              {"command":"reload","plugin":"NAME"}
          GET  /healthz       200 while frames flow, 503 otherwise (no token needed)
          GET  /inputs, POST /inputs, GET|PUT|DELETE /inputs/NAME,
          GET  /analytics, PUT|DELETE /zones/NAME, /lines/NAME, /tracks/PLUGIN:
                              see CHANGING A RUNNING CVHOST
        With a token (--http-token-file or $CVHOST_HTTP_TOKEN), requests for data carry
        "Authorization: Bearer TOKEN" (a browser: ?token=TOKEN in the page's address).
        Web pages in your browser reach a loopback server too, so it answers only
        requests whose Host is localhost, an IP address, the --http name or an
        --http-allow-host name (else 421), and takes a change only from its own
        page or a program (else 403), a POST only as application/json (else 415).
        The same changes as JSON lines on stdin, answered by a command.result line:
          {"command":"set_control","name":"brightness","value":140}
          {"command":"set_plugin","plugin":"barcode","enabled":false}
          {"command":"reload","plugin":"NAME"}   (a Python plugin's code, anew)
          {"command":"get_controls"}   {"command":"stop"}
        Every change is a control.changed line. --no-stdin-commands leaves stdin alone.
        """

    /// The settings these options give, checked. - Throws: UsageError naming the option.
    func settings() throws(UsageError) -> LiveViewSettings? {
        try LiveViewSettings(http: http, tokenFile: tokenFile, allowHosts: allowHosts, previewFPS: previewFPS,
                             previewWidth: previewWidth, linger: linger, allowInputs: allowInputs, publicURL: publicURL)
    }

    func validate() throws {
        do { _ = try settings() } catch { throw ValidationError(error.description) }
    }
}
