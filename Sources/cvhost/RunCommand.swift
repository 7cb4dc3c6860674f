import ArgumentParser
import CVHostCore
import CVHostFleet
import CVHostMotion
import CVHostPlugins
import CVHostRun
import CVHostSources

extension BackpressurePolicy: ExpressibleByArgument {}
extension PluginIsolation: ExpressibleByArgument {}

struct RunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run plugins on an input and write their results as JSON Lines (stdout, files, MQTT, Kafka, NATS).",
        discussion: """
            EXAMPLES
              cvhost run --plugin barcode                    # the first camera
              cvhost run --plugin barcode --input clip.mp4
              cvhost run --plugin barcode --oneshot --input photo.jpg
              cvhost run --plugin barcode --input 'shots/*.png' > codes.jsonl
              cvhost run --plugin barcode:symbologies=qrcode+ean13 \\
                         --device /dev/video2 --format 1280x720@30
              cvhost run --plugin face --reconnect \\
                         --input gate=rtsp://user:pass@10.0.0.5/stream1
              cvhost run --config /etc/cvhost/gate.yaml --http 8080

            INPUTS (--input; without it, the camera of --device or the first camera)
              clip.mp4, clip.mkv, ...   a video file (FFmpeg); nothing is dropped
              photo.jpg                 an image (PNG, JPEG, WebP, PPM, BMP, TIFF)
              shots/                    every image in a folder, in name order
              'shots/*.png'             images matching a glob (quote it)
              testsrc[:WxH][@FPS]       a synthetic live camera (640x480@30)
              testsrc:...:unpaced       the same, as fast as plugins take frames
              rtsp://[user:pass@]host[:port]/path, rtsps://...
                                        an IP camera (RTP over TCP; UDP when the
                                        server refuses TCP)
              rtsp://cam/sub,record=rtsp://cam/main
                                        plugins read the first, clips (--clips)
                                        are the second's packets
              http(s)://...             an MJPEG stream, an HLS playlist (.m3u8),
                                        a progressive MP4
              rtmp://, srt://, udp://   other live streams
              -                         a stream on standard input (e.g. from
                                        ffmpeg ... -f mpegts -)
              a named pipe              the same, from a FIFO
            Several --input and --device flags run several inputs at once, each with its own capture thread, plugin instances, queues and metrics. NAME= in front names an input (--input gate=rtsp://..., --device desk=/dev/video0): every line's "source" is that name, or else the input as written (a URL without its password) or the camera's path. Every input must open for the run to start (else exit 3, naming it); an input that fails later is reported (session.error with its source) and the others go on; the run's exit code is then 2. --max-frames counts per input; --format, --pixel-format and --control apply to every camera.

            Network streams are live: late frames are dropped by default, frames are stamped on arrival, media time is the stream's. Standard input and pipes are read like files (nothing dropped), in a format that needs no seeking (MPEG-TS, Matroska). A password in a URL is used, never printed (user:***@). An open that fails (refused, not found, wrong credentials, no answer within --open-timeout) is exit 3; no data for 2 s is session.interrupted; a lost connection is session.error and exit 2, or with --reconnect a new connection with backoff and session.interruption_ended when frames flow.

            PLUGINS (--plugin NAME[:key=value,...], repeatable)
              barcode   1D and 2D codes: QR, DataMatrix, EAN, Code 128... (zxing-cpp)
              face      faces (a CNN, libfacedetection): an id across frames,
                        bounds, landmarks, angles
              detect    your own ONNX model's objects or classes (YOLO, SSD, a
                        classifier) on onnxruntime or OpenVINO
              motion    share of pixels that changed, motion start and stop
              null      does nothing, at a chosen cost (tests, benchmarks)
            NAME is looked up as libcvhost-NAME.so in $CVHOST_PLUGIN_PATH, beside this executable, and in <prefix>/lib/cvhost/plugins; a path (./libfoo.so) loads that file; a Python file (./brightness.py) is a Python plugin, run by $CVHOST_PYTHON, $VIRTUAL_ENV's or the PATH's python3 in worker processes, and reloaded when the file changes. A plugin file that another user could change (it, or a folder above it, belongs to another user or is writable by others) is refused (exit 24) unless CVHOST_UNSAFE_PLUGIN_FILES=1. `cvhost plugins` lists them with their options. A comma inside a value is written \\,. Every plugin also takes these host options:
              instances=N|auto  N instances on N threads (auto: one per core)
              queue_depth=N     frames that may wait (default --queue-depth)
              backpressure=P    drop-late or block (default --backpressure)
              max_fps=F         at most F frames per second of media time
              mirror=true       flip frames left to right for this plugin
              rotate=90|180|270 turn frames clockwise for this plugin (after mirror)
              isolation=I       none or process (default --isolation)
              timeout_ms=N      process: a call longer than N ms is a hang (5000)
              max_rss_mb=N      process: restart the worker above N MiB resident
              share=S           auto, true or false: one set of instances for every
                                input (auto: when the plugin keeps no state)
              batch=N           shared: the most frames of several inputs in one
                                call (4 for a plugin with process_batch, else 1)
              batch_wait_ms=MS  shared: how long a frame waits for a batch (0)

            TRACKS, ZONES AND LINES (--track, --zone, --line)
              cvhost run --plugin detect:model=yolov8n.onnx --input gate.mp4 \\
                         --track detect \\
                         --zone 'bay=800,300 1100,300 1100,650 800,650:dwell=600' \\
                         --line 'door=0.5,0.1 0.5,0.9:in=left'
            --track PLUGIN follows the boxes (`bounds`) of that plugin's results from frame to frame, across labels (ByteTrack: a motion model, overlap matching, a second pass for weak boxes; by_label=true keeps labels apart): a track is reported after min_hits frames in a row, with track.started and a track_id in each of its results, and ends with track.ended after `lost` seconds unseen (media time, not frames, never running backwards: a timestamp jump is input.time_jumped). A track's label is the one its boxes had most often. Frames a plugin's max_fps passes over are seen by zones and lines too, each track placed between its boxes in the detections around them. Boxes at or above `high` confidence start and keep tracks (high comes down to the plugin's own confidence unless given); from `low` up they only keep them; boxes that join no track are counted (untracked_results). A track whose box stays put `stationary` seconds is stationary (track.stationary; "stationary":true in its results): it stays in its zones and is never counted on a line; with --motion it is kept while no motion touches it. At an input's end: analytics.summary, its totals.
            A zone is a polygon of 3 or more points whose edges do not cross; a line is two points. Points are pixels of the frame, or fractions of it (0..1: units=fractions, or when every coordinate is within 0..1). A track's anchor (bottom_center, the default; center, top_center, bottom_left, bottom_right) of its filtered box is tested, beyond a band along the outline or the line (min_distance pixels; by default a fifth of the box's height for a zone, a quarter for a line): zone.entered and zone.exited (with its seconds inside) once it has been beyond the band on the other side of the outline min_frames frames in a row (2), zone.occupancy per label when it changes, zone.dwell once a track has stayed `dwell` seconds. line.crossed, with direction in or out (in: the side of `in`, left or right facing from the first point to the second; left by default), the running counts of its label and the totals, once a track has been beyond the band on the other side min_frames frames (2): a box that jitters or is parked on the line is never counted. A zone of four points with distances=A,B,C,D (the real length of each side, metres; feet with speed_unit=mph) measures speed: `speed` on zone.exited and on a line.crossed inside it. input=ID watches one input only. In a config file: track:, zone: and line: lists of the same strings; an error names the file and line.

            CHANGING A RUNNING CVHOST
            Inputs, tracks, zones, lines, masks and filters change while the run goes on, over HTTP (--http) or as JSON lines on stdin; other inputs never pause or lose a frame:
              curl -H 'Content-Type: application/json' -d '{"name":"door","input":"rtsp://cam/1"}' http://127.0.0.1:8080/inputs
              curl -X PUT -d '{"points":[[100,400],[500,400]],"input":"door"}' http://127.0.0.1:8080/lines/entry
              curl -X DELETE http://127.0.0.1:8080/inputs/door
              {"command":"add_input","name":"door","input":"rtsp://cam/1"}
            On stdin: add_input, change_input, remove_input, get_inputs, set_zone, set_line, set_track, set_mask, set_filter, remove_zone, remove_line, remove_track, remove_mask, remove_filter, get_analytics, reset_counts (POST /analytics/reset: counts back to 0, of every line and zone or of one source, line or zone).
            An added input gets the run's plugins (or those named), its input.added and session.started; a removed one its input.removed, final metrics and session.stopped (reason removed). Refused: 400 a bad request, 403 an input --allow-inputs does not allow (over HTTP: network streams only unless it says files, a folder, devices or listen), 404 none of that name, 409 a name taken or --max-inputs reached, 422 an input that cannot be opened or a plugin the run lacks. A zone or line changed keeps its counts unless its points (or a line's in side, or its input) changed; each change is an analytics.changed line. GET /inputs gives each input's health: state (starting, streaming, reconnecting with the next try, stopped with why), last_frame_age, fps, reconnects. --state FILE keeps every change for the next start (JSON, 0600), and the counts beside it: they go on after a restart. With --config, SIGHUP (systemctl reload) reads the file again and applies what changed (inputs, tracks, zones, lines; the rest takes a restart); a file with an error is refused and the run goes on.

            ISOLATION
            none (the default): a plugin runs in cvhost's process; a crash or exit() in it ends the run (exit 19). process: each --plugin runs in a worker process of its own (this executable, run again), frames shared through memory, results checked by cvhost as always. A crash, exit(), a call hung past timeout_ms or memory past max_rss_mb gives plugin.crashed; the frames meanwhile are dropped (reason restarting), the worker is started again after a backoff (0.1 s, doubling) and plugin.restarted follows; 5 crashes within 60 s quarantine it (plugin.quarantined): the run goes on without it and ends with exit 21.

            BACK-PRESSURE
            drop-late (live sources' default): at most --queue-depth frames wait for each plugin; when a newer frame arrives, the oldest waiting one is dropped and counted. A slow plugin never slows the source or another plugin. block (the default for files and images): the source waits; nothing is lost.

            OUTPUT
            The output is JSON Lines only: session.started, result, metrics, session.error, session.stopped and more (with a camera, device.connected and device.disconnected when cameras are plugged in or out; output.connected and output.disconnected for a broker). Every line names its producer ("host", "session") and its input ("source"). The final metrics of every plugin and then session.stopped are always an input's last lines. Messages for people go to stderr.

            \(RunOutput.helpText)

            \(HTTPOptions.helpText)

            \(RunConfigFile.helpText)

            \(ExitCodes.helpText)
            """)

    @Option(name: .customLong("plugin"), help: ArgumentHelp("A plugin to run, with options: NAME[:key=value,...]. Repeatable.",
                                                            valueName: "spec"))
    var plugins: [String] = []

    @Option(name: .customLong("track"), help: ArgumentHelp(
        "Follow a plugin's boxes across frames, across labels: PLUGIN [:high=0.4 (or the plugin's confidence when lower), low=0.1, min_hits=3, lost=1.5, iou=0.2, by_label=false, stationary=10]. Its results get track_id; track.started, track.ended, analytics.summary (see TRACKS, ZONES AND LINES). Repeatable.",
        valueName: "plugin"))
    var track: [String] = []

    @Option(name: .customLong("zone"), help: ArgumentHelp(
        "A zone tracks are watched in: NAME=X,Y X,Y X,Y... [:dwell=S, anchor=A, min_frames=N, min_distance=PX (the band along its outline; by default 3 times the track's own jitter, at most a fifth of its box's height), input=ID, units=U, distances=A,B,C,D (four points: its sides' real lengths, for speed), speed_unit=kmh|mph|mps]. Repeatable.",
        valueName: "zone"))
    var zones: [String] = []

    @Option(name: .customLong("line"), help: ArgumentHelp(
        "A line tracks are counted across: NAME=X,Y X,Y [:in=left|right, anchor=A, min_frames=N, min_distance=PX (the band on each side; by default 3 times the track's own jitter, at most a quarter of its box's height), input=ID, units=U]. Repeatable.",
        valueName: "line"))
    var lines: [String] = []

    @Option(name: .customLong("filter"), help: ArgumentHelp(
        "Boxes of a label too doubtful to follow (never tracked, so never counted; counted as filtered_results): LABEL (or * for every label) [:min_score=S, min_area=A, max_area=A (pixels, or a share of the frame when at most 1), min_ratio=R, max_ratio=R (width / height), input=ID]. Repeatable.",
        valueName: "filter"))
    var filters: [String] = []

    @Option(name: .customLong("mask"), help: ArgumentHelp(
        "A part of the picture where boxes are ignored (a tree that moves, a road beyond the fence): NAME=X,Y X,Y X,Y... [:anchor=A (the box's point that must be inside; bottom_center), input=ID, units=U]. Repeatable.",
        valueName: "mask"))
    var masks: [String] = []

    @Option(name: .customLong("snapshots"), help: ArgumentHelp(
        "Keep a JPEG of the frame each event came from: DIR [:on=EVENTS (joined by +; the counts' events with --track, else result), crop=true (the event's box, margin=0.25 of it around), draw=true (the boxes and labels drawn), from=frame (or record: the keyframe of the input's record= stream nearest the event), max_gb=1, max_age=7d, min_free_gb=1]. The event's line gets `snapshot`: the file's path. track.ended's is the track's best frame.",
        valueName: "dir"))
    var snapshots: String?

    @Option(name: .customLong("clips"), help: ArgumentHelp(
        "Keep an MP4 clip around each event, the input's own packets copied: DIR [:on=EVENTS, pre=5, post=10 (seconds before the event and after the last that extends the clip), max=120, max_gb=10, max_age=7d, min_free_gb=1]. Each clip is said as clip.saved. Files' and network cameras' packets are copied; a raw camera's frames are encoded (libx264).",
        valueName: "dir"))
    var clips: String?

    @Option(name: .customLong("events-db"), help: ArgumentHelp(
        "Keep the events worth looking back at (crossings, zone entries and exits, track ends, clips, inputs' states) in a SQLite file, queried by GET /history: PATH (default with --snapshots or --clips: events.sqlite in that folder; off: none).",
        valueName: "path"))
    var eventsDB: String?

    @Option(name: .customLong("input"),
            help: ArgumentHelp("What to read: a video file, an image, a folder, a quoted glob, a stream URL (rtsp://, http://...), - for stdin, or testsrc[:WxH][@FPS]. Repeatable; NAME= in front names it.",
                               valueName: "[name=]source"))
    var inputs: [String] = []

    @Option(name: .customLong("device"),
            help: ArgumentHelp("A V4L2 camera, e.g. /dev/video0 (default, with no --input: the first camera). Repeatable; NAME= in front names it.",
                               valueName: "[name=]path"))
    var devices: [String] = []

    @Option(help: ArgumentHelp("Camera format: WxH[@FPS], high, medium, low or input-priority (default: medium, the size nearest 1280x720).",
                               valueName: "format"))
    var format: String?

    @Option(name: .customLong("pixel-format"), help: ArgumentHelp("Camera pixel format: a four-character code (YUYV, MJPG) or nv12, i420, gray8...",
                                                                  valueName: "code"))
    var pixelFormat: String?

    @Option(name: .customLong("control"), help: ArgumentHelp("Set a camera control: NAME=VALUE (a number, on/off, or a menu item). Repeatable; `cvhost devices` lists them.",
                                                              valueName: "name=value"))
    var controls: [String] = []

    @Flag(help: "If the camera is unplugged or a stream's connection is lost, wait for it to come back and go on (default: end with an error, exit 2).")
    var reconnect = false

    @Option(name: .customLong("rtsp-transport"), help: ArgumentHelp("RTP over tcp or udp for rtsp:// inputs (default: tcp, and udp when the server refuses tcp).",
                                                                    valueName: "tcp|udp"))
    var rtspTransport: String?

    @Option(name: .customLong("open-timeout"), help: ArgumentHelp("Seconds a stream URL may take to open (10, 2.5, 30s, 1m).", valueName: "seconds"))
    var openTimeout = Seconds(10)

    @Option(name: .customLong("max-image-pixels"),
            help: ArgumentHelp("An image whose header declares more pixels than this is skipped before it is decoded (a small file can declare a picture that takes gigabytes): input.skipped says so. 0: no limit.",
                               valueName: "pixels"))
    var maxImagePixels: Int = StillImageDevice.defaultMaxPixels

    @Option(name: .customLong("output"),
            help: ArgumentHelp("Where the JSON lines go: - (stdout, the default), file:PATH, mqtt://[user[:password]@]host[:port][/prefix], mqtts://..., kafka://broker[,broker]/TOPIC or nats://host[:port][/subject]. Repeatable; see OUTPUTS.",
                               valueName: "destination"))
    var outputs: [String] = []

    @Flag(name: .customLong("results-only"),
          help: "Write only result lines to stdout (no session, metrics or other events; files and brokers get what their own events= picks: every line by default).")
    var resultsOnly = false

    @Flag(name: .customLong("events"),
          help: "Write only result lines and the analytics' events to stdout (track.*, zone.*, line.*, analytics.summary, input.time_jumped; files and brokers get what their own events= picks: every line by default).")
    var events = false

    @Option(help: ArgumentHelp("Write only this field of each result's data to stdout, as plain text, a line each (e.g. --field text: a barcode's decoded text, as zbarimg prints it raw); results without it are skipped.",
                               valueName: "name"))
    var field: String?

    @OptionGroup(title: "Live view and control")
    var http: HTTPOptions

    @Flag(help: "Stop at the first frame with a result: write that frame's results and the final lines (as zbarcam -1). Exit 22 when the input ends with none.")
    var oneshot = false

    @Flag(inversion: .prefixedNo, help: "Read JSON commands from stdin while running (set_control, set_plugin, reload, get_controls, add_input, change_input, remove_input, get_inputs, stop); off when an input is stdin.")
    var stdinCommands = true

    @Option(name: .customLong("max-inputs"),
            help: ArgumentHelp("The most inputs the run may have at once, those added while it runs (POST /inputs, add_input) counted: an add beyond it is refused (409).",
                               valueName: "count"))
    var maxInputs = 32

    @Option(name: .customLong("state"),
            help: ArgumentHelp("Keep every change made while running (inputs, tracks, zones, lines: over HTTP or stdin) in this file, and apply it over the config file and the command line at the next start and at a reload (see CHANGING A RUNNING CVHOST); and the lines' and zones' counts beside it (FILE.totals.json), which go on at the next start.",
                               valueName: "file"))
    var state: String?

    @Option(name: .customLong("fleet"),
            help: ArgumentHelp("Join this run to a site of many machines as one of its nodes: nats://HOST[:PORT][,HOST...]/SITE (a NATS JetStream cluster). The site's inputs, given with `cvhost fleet add-input`, are taken by the nodes by lease, and taken over within seconds when a node dies; inputs given here run on this node alone (see docs/fleet.md).",
                               valueName: "url"))
    var fleet: String?

    @Option(name: .customLong("node"),
            help: ArgumentHelp("This node's name in its site (--fleet); the host's name by default.", valueName: "name"))
    var node: String?

    @Option(name: .customLong("reset-counts-at"),
            help: ArgumentHelp("Set every line's and zone's counts back to 0 each day at this local time (HH:MM, e.g. 00:00), as reset_counts does; with --state, also when cvhost was not running at that time.",
                               valueName: "time"))
    var resetCountsAt: String?

    @Option(name: .customLong("motion"),
            help: ArgumentHelp("Look for motion in every input's frames (their luma, on a small picture, against a background that follows slow changes; --mask parts left out) and say when it starts and ends: motion.started (with its boxes) and motion.ended lines. on, or settings such as threshold=25,hold=5 (height, threshold, min_area, alpha, lightning, contrast, hold: see docs/motion.md).",
                               valueName: "settings"))
    var motion: String?

    @Option(name: .customLong("max-frames"), help: ArgumentHelp("Stop each input after this many frames.", valueName: "count"))
    var maxFrames: UInt64?

    @Option(help: ArgumentHelp("Stop after this many seconds of wall-clock time (90, 1.5, 90s, 2m, 1h), also for files (a file read slower than real time covers less of itself; --max-frames counts frames).",
                               valueName: "seconds"))
    var duration: Seconds?

    @Option(help: ArgumentHelp("What to do when a plugin is busy: drop-late or block (default: drop-late for live sources, block for files and images).",
                               valueName: "policy"))
    var backpressure: BackpressurePolicy?

    @Option(help: ArgumentHelp("Where plugins run: none (in cvhost's process) or process (each in a worker process that is restarted when it crashes). A plugin's isolation= option overrides it.",
                               valueName: "none|process"))
    var isolation: PluginIsolation = .none

    @Option(name: .customLong("queue-depth"), help: ArgumentHelp("Frames that may wait for each plugin.", valueName: "frames"))
    var queueDepth: Int = 2

    @Option(name: .customLong("metrics-interval"), help: ArgumentHelp("Seconds between metrics events (0: only the final ones; 5, 30s, 1m).",
                                                                      valueName: "seconds"))
    var metricsInterval = Seconds(5)

    @Option(help: ArgumentHelp("Read the options from a YAML file (see CONFIG FILE); options on the command line override it.",
                               valueName: "file"))
    var config: String?

    @Flag(name: .shortAndLong, help: "Log more on stderr (debug messages).")
    var verbose = false

    @Flag(name: .shortAndLong, help: "Log only warnings and errors on stderr.")
    var quiet = false

    /// Words that are no option's value: a shell's expansion of an unquoted glob, most often.
    @Argument(help: ArgumentHelp(visibility: .private))
    var unexpected: [String] = []


    /// Every long option of `cvhost run` (a test checks the config keys against `run --help`).
    static var longOptions: [String] {
        RunConfigFile.keys.sorted { $0.key < $1.key }.flatMap { key, kind in kind == .invertedFlag ? [key, "no-" + key] : [key] }
            + ["config", "help", "version"]
    }

    func validate() throws {
        // ArgumentParser checks this before it reports an unknown option, and an unknown option
        // followed by a value (--max-frame 3) reaches it as that value, unexpected: say which
        // option is unknown, and what was meant.
        let words = CommandLine.arguments.dropFirst().prefix { $0 != "--" }
        let optionNames = words.filter { $0.hasPrefix("--") }.map { String($0.dropFirst(2).prefix { $0 != "=" }) }
        let known = Self.longOptions
        if let typo = optionNames.first(where: { !known.contains($0) }) {
            let meant = Suggestion.closest(to: typo, in: known).map { ": did you mean '--\($0)'?" } ?? " (cvhost run --help lists them)"
            throw ValidationError("unknown option '--\(typo)'\(meant)")
        }
        if !unexpected.isEmpty {
            let words = unexpected.prefix(3).map { "'\($0)'" }.joined(separator: ", ") + (unexpected.count > 3 ? "..." : "")
            throw ValidationError("unexpected \(unexpected.count == 1 ? "argument" : "arguments") \(words): every input needs its own --input"
                                  + " (an unquoted glob such as shots/*.png is expanded by the shell: quote it, --input 'shots/*.png')")
        }
        do { _ = try settings() } catch { throw ValidationError(error.description) }
    }

    /// Where the config file gives a value of a list (a plugin spec, a zone), as "FILE:LINE: KEY"
    /// (set by CVHost.main before parsing, once).
    nonisolated(unsafe) static var origin: (_ key: String, _ value: String) -> String? = { _, _ in nil }

    /// With --config: the settings read anew from the file and the command line, for a reload
    /// (SIGHUP); throws the file's or a setting's error, one line. Nil without --config (set by CVHost.main).
    nonisolated(unsafe) static var reread: (() throws -> RunSettings)?

    /// The options, checked as a whole (RunSettings): what HostRun runs.
    func settings() throws(UsageError) -> RunSettings {
        // The changes kept from earlier runs (--state), over the command line's and the config file's.
        let stateFile = try state.map { path throws(UsageError) in try RunStateFile(path: path) }
        var kept = RunArguments(inputs: inputs, devices: devices)
        stateFile?.current.apply(to: &kept)
        var settings = try RunSettings(plugins: plugins, inputs: kept.inputs, devices: kept.devices, outputs: outputs, resultsOnly: resultsOnly, events: events, field: field,
                        format: format, pixelFormat: pixelFormat, controls: controls, reconnect: reconnect,
                        rtspTransport: rtspTransport, openTimeout: openTimeout.value, maxImagePixels: maxImagePixels,
                        queueDepth: queueDepth, backpressure: backpressure, isolation: isolation,
                        oneshot: oneshot, maxFrames: maxFrames, duration: duration?.value, metricsInterval: metricsInterval.value,
                        stdinCommands: stdinCommands, verbose: verbose, quiet: quiet, liveView: try http.settings())
        for spec in plugins { settings.pluginOrigins[spec] = Self.origin("plugin", spec) }
        if let fleet {
            // A node runs the site's inputs: none of its own unless given (not the first camera).
            do { _ = try FleetAddress(parsing: fleet) } catch { throw UsageError(error.description) }
            if kept.inputs.isEmpty && kept.devices.isEmpty { settings.inputs = [] }
            settings.fleet = fleet
            settings.waitsForInputs = true
        }
        if let node {
            guard fleet != nil else { throw UsageError("--node names this run in its site: it needs --fleet") }
            guard FleetAddress.isNodeName(node) else { throw UsageError("--node \(node): a node's name is 1 to 64 letters, digits, _ or -") }
            settings.node = node
        }
        // A plugin gated on motion (on_motion=true) has the inputs' motion looked for, with the defaults when --motion is not given.
        settings.motion = try motion.map { text throws(UsageError) in
            do throws(MotionSettings.Problem) { return try MotionSettings(parsing: text) } catch { throw UsageError("--\(error.description)") }
        } ?? (plugins.contains(where: Self.gatedOnMotion) ? MotionSettings() : nil)
        // Zones and lines of an input a change removed (kept by the state file) are set aside, not refused.
        let removed = Set(stateFile?.current.inputs.filter { $0.value == nil }.keys.map { $0 } ?? [])
        settings.analytics = try AnalyticsSettings(track: track, zones: zones, lines: lines, filters: filters, masks: masks,
                                                   inputs: settings.inputs.map { $0.sourceID() }, removed: removed, kept: stateFile, motion: settings.motion != nil,
                                                   origin: Self.origin)
        settings.keep(stateFile, inputPlugins: kept.inputPlugins)
        try settings.limitInputs(to: maxInputs)
        settings.snapshots = try RunSettings.evidence(snapshots, .snapshots)
        settings.clips = try RunSettings.evidence(clips, .clips)
        settings.eventsDatabase = try RunSettings.eventsDatabase(eventsDB, snapshots: settings.snapshots, clips: settings.clips)
        settings.resetCountsAt = try resetCountsAt.map { text throws(UsageError) in try DailyTime(text) }
        return settings
    }

    /// Whether a --plugin's text asks for on_motion=true (a value it cannot be is refused when the plugin is loaded).
    static func gatedOnMotion(_ spec: String) -> Bool {
        guard let request = try? PluginRequest(parsing: spec), let given = request.options.last(where: { $0.key == "on_motion" }) else { return false }
        return (try? PluginConfiguration.hostOptions.first { $0.name == "on_motion" }?.normalize(given.value, plugin: request.nameOrPath)) == "true"
    }

    func run() throws {
        // What a plugin's worker started and left behind is reparented to cvhost, which ends it
        // with the worker, instead of to init, where it would outlive the run.
        WorkerDescendants.adoptOrphans()
        try asCommandErrors { try RunProcess.run(try settings(), reread: Self.reread) }
    }
}
