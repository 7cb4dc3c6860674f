// swift-tools-version:6.0
// cvhost: a plugin-based computer-vision frame-processing host for Linux.
//
// Floors (each uses only the floors below it):
//   cvhost (CLI)
//   CVHostFleet
//   CVHostRun
//   CVHostHTTP, CVHostPlugins, CVHostSources, CVHostV4L2, CVHostAnalytics, CVHostOutput, CVHostEvidence, CVHostEvents
//   CVHostLines
//   CVHostCore, CVHostPluginABI, and the C targets (CFFmpeg, CV4L2Shim, CMosquitto, CKafka, CNATS, CSQLite, CPluginGuard, CWorkerIPC, CSharedMemory)
// Plugins under Plugins/<name>/ know only the C header in CVHostPluginABI.
import PackageDescription

/// zxing-cpp, built by scripts/build-zxing.sh into the package (a static library linked into the barcode
/// plugin). Its version is written in that script alone (and in the folder's VERSION file).
let zxing = Context.packageDirectory + "/.deps/zxing-cpp"
/// libfacedetection's CNN, put there by scripts/fetch-facedetect.sh: the face plugin loads it at run
/// time (dlopen), from an installation's lib/cvhost/facedetect or else from here.
let facedetect = Context.packageDirectory + "/.deps/libfacedetection"

let package = Package(
    name: "cvhost",
    products: [
        .executable(name: "cvhost", targets: ["cvhost"]),
        .executable(name: "cvhost-bench", targets: ["cvhost-bench"]),
        // Each plugin is a shared object named libcvhost-<name>.so, built beside the executable.
        .library(name: "cvhost-null", type: .dynamic, targets: ["NullPlugin"]),
        .library(name: "cvhost-barcode", type: .dynamic, targets: ["BarcodePlugin"]),
        .library(name: "cvhost-face", type: .dynamic, targets: ["FacePlugin"]),
        .library(name: "cvhost-motion", type: .dynamic, targets: ["MotionPlugin", "MotionPluginDescriptor"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        // The HTTP server of --http (HTTP/1.1 parsing and connections; not hand-written).
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        // `cvhost run --config FILE`: YAML through libyaml, with the line of every node for errors.
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
    ],
    targets: [
        // The one public header plugin authors compile against.
        .target(name: "CVHostPluginABI", path: "Sources/CVHostPluginABI"),

        // Shared memory (memfd) for pixel buffers a plugin's worker process maps (C: memfd_create, seals).
        .target(name: "CSharedMemory", path: "Sources/CSharedMemory"),

        // Session, devices, formats, connections, video data output, pixel buffers, events; pixel
        // conversions and frames decoded by FFmpeg as pixel buffers (libswscale, libavutil).
        .target(name: "CVHostCore", dependencies: ["CFFmpeg", "CSharedMemory", "CYUV", "CColourMatrix"], path: "Sources/CVHostCore"),

        // libyuv (Debian's libyuv-dev): chroma upsampled (bilinear) and split out of NV12 and YUYV, for YUV to RGB.
        .systemLibrary(name: "CYUV", path: "Sources/CYUV", providers: [.apt(["libyuv-dev"])]),

        // The matrix step of YUV to RGB (C: vectorized by the compiler, an AVX2 build chosen at load time).
        .target(name: "CColourMatrix", path: "Sources/CColourMatrix", cSettings: [.unsafeFlags(["-O2"])]),

        // The signal handler that names a plugin that crashed the process (C: async-signal-safe).
        .target(name: "CPluginGuard", path: "Sources/CPluginGuard"),

        // A plugin's worker process (isolation=process): spawning it with only the descriptors it
        // needs, descriptors over unix sockets (SCM_RIGHTS), no_new_privs (C: macros Swift cannot import).
        .target(name: "CWorkerIPC", path: "Sources/CWorkerIPC"),

        // What boxes do across frames: followed (ByteTrack), entering and leaving zones, crossing lines.
        .target(name: "CVHostAnalytics", dependencies: ["CVHostCore", "CVHostLines"], path: "Sources/CVHostAnalytics"),

        // FFmpeg's libav* (decoding of video files, streams, still images and MJPEG; pixel conversions).
        .systemLibrary(
            name: "CFFmpeg", path: "Sources/CFFmpeg", pkgConfig: "libavformat",
            providers: [.apt(["libavformat-dev", "libavcodec-dev", "libswscale-dev", "libavutil-dev"])]),

        // V4L2 ioctl numbers (function-like macros in C) and ioctl itself, for Swift; libv4lconvert.
        .target(name: "CV4L2Shim", path: "Sources/CV4L2Shim", linkerSettings: [.linkedLibrary("v4lconvert")]),

        // Linux cameras: discovery, formats, controls, streaming; MJPEG decoded with FFmpeg, Bayer and vendor formats with libv4lconvert.
        // Motion in an input's frames, from their luma (Frigate's steps on a small picture): where
        // a detector need look, and when.
        .target(name: "CVHostMotion", dependencies: ["CVHostCore", "CVHostAnalytics"], path: "Sources/CVHostMotion"),
        .target(name: "CVHostV4L2", dependencies: ["CVHostCore", "CV4L2Shim", "CFFmpeg"], path: "Sources/CVHostV4L2"),

        // Capture devices that are not cameras: test pattern, still images, video files.
        .target(name: "CVHostSources", dependencies: ["CVHostCore", "CFFmpeg"], path: "Sources/CVHostSources"),

        // libmosquitto, the MQTT reference client (Debian's libmosquitto-dev): the MQTT output sink.
        .systemLibrary(name: "CMosquitto", path: "Sources/CMosquitto", pkgConfig: "libmosquitto", providers: [.apt(["libmosquitto-dev"])]),
        // SQLite (Debian's libsqlite3-dev): the event store (--events-db).
        .systemLibrary(name: "CSQLite", path: "Sources/CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),

        // librdkafka (Debian's librdkafka-dev): the Kafka output's idempotent producer; its variadic
        // producev as a plain function (C).
        .target(name: "CKafka", path: "Sources/CKafka", linkerSettings: [.linkedLibrary("rdkafka")]),

        // The NATS C client (Debian's libnats-dev): the NATS JetStream output.
        .systemLibrary(name: "CNATS", path: "Sources/CNATS", pkgConfig: "libnats", providers: [.apt(["libnats-dev"])]),

        // The words every room speaks: a line and its route, the JSON object it is built as and its
        // envelope (who produced it, which line it is), the validator of what plugins emit, the
        // Prometheus text, and what a sink is. No I/O library: a room that needs only the words
        // (analytics, plugins, the live view) does not depend on a broker's client.
        .target(
            name: "CVHostLines",
            dependencies: ["CVHostCore", .product(name: "Histogram", package: "hdrhistogram-swift")],
            path: "Sources/CVHostLines"),

        // What leaves the machine: the sinks lines go to (stdout, files, MQTT, Kafka, NATS
        // JetStream) behind bounded queues, brokers' through a spool on disk.
        .target(
            name: "CVHostOutput",
            dependencies: ["CVHostCore", "CVHostLines", "CPluginGuard", "CMosquitto", "CKafka", "CNATS", .product(name: "Histogram", package: "hdrhistogram-swift")],
            path: "Sources/CVHostOutput"),

        // Plugin loader (descriptors read from the ELF file), plugin instances in this process or in a
        // worker process (this executable again, or python3 for a Python plugin), metrics and result validation.
        .target(
            name: "CVHostPlugins",
            dependencies: [
                "CVHostCore", "CVHostLines", "CVHostPluginABI", "CPluginGuard", "CWorkerIPC",
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ],
            path: "Sources/CVHostPlugins",
            // python/cvhost: the Python plugin API and worker, run by the user's python3 (copied, as it is).
            resources: [.copy("python")]),

        // --http: the embedded server (SwiftNIO), its routes' plumbing (token, slow clients dropped),
        // the live picture as JPEG (FFmpeg's mjpeg encoder) for MJPEG viewers and snapshots,
        // results as Server-Sent Events, and the page (web/, served as it is: no build step).
        .target(
            name: "CVHostHTTP",
            dependencies: [
                "CVHostCore", "CVHostLines", "CFFmpeg",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Sources/CVHostHTTP",
            resources: [.copy("web")]),

        // FFmpeg's libavfilter (Debian's libavfilter-dev): its drawbox and drawtext filters draw the
        // boxes and labels on snapshots (draw=true).
        .systemLibrary(name: "CAVFilter", path: "Sources/CAVFilter", pkgConfig: "libavfilter", providers: [.apt(["libavfilter-dev"])]),

        // Evidence of what cvhost saw: snapshots (JPEG) of the frames events came from, and clips
        // (MP4, the input's own packets copied) around them, each folder within a disk budget.
        .target(name: "CVHostEvidence", dependencies: ["CVHostCore", "CVHostLines", "CFFmpeg", "CAVFilter"], path: "Sources/CVHostEvidence"),

        // The events a user looks back at: crossings, zone entries and exits, track ends, clips and
        // inputs' states, from the lines, in a SQLite file; queried by GET /history.
        .target(name: "CVHostEvents", dependencies: ["CVHostCore", "CVHostLines", "CSQLite"], path: "Sources/CVHostEvents"),

        // `cvhost run` itself: its settings checked as a whole, the config file, opening outputs,
        // plugins and inputs in order, stopping (signals, --duration, hung plugins), the final lines,
        // commands while running (stdin, HTTP) and the exit code of every ending.
        .target(
            name: "CVHostRun",
            dependencies: [
                "CVHostCore", "CVHostSources", "CVHostV4L2", "CVHostLines", "CVHostOutput", "CVHostPlugins", "CVHostHTTP", "CVHostAnalytics", "CVHostEvidence",
                "CVHostEvents", "CVHostMotion", "CPluginGuard", .product(name: "Yams", package: "Yams"),
            ],
            path: "Sources/CVHostRun"),

        // A site of many machines (`cvhost run --fleet`, `cvhost fleet`): the site's inputs in NATS
        // JetStream key-value buckets, taken by the nodes by lease, taken over when a node dies.
        .target(name: "CVHostFleet", dependencies: ["CVHostCore", "CVHostLines", "CVHostAnalytics", "CVHostRun", "CNATS"], path: "Sources/CVHostFleet"),

        // The command line: words parsed into settings (ArgumentParser), help, and the other commands.
        .executableTarget(
            name: "cvhost",
            dependencies: [
                "CVHostCore", "CVHostSources", "CVHostV4L2", "CVHostLines", "CVHostOutput", "CVHostPlugins", "CVHostRun", "CVHostMotion", "CVHostFleet",
                "CPluginGuard",
                // Not imported: a dependency so that `swift build` puts the bundled Python plugins beside the executable.
                "PythonPlugins",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/cvhost"),

        // What the host itself costs, measured with the null plugin, and its MJPEG decoding (not a test: prints figures).
        .executableTarget(
            name: "cvhost-bench", dependencies: ["CVHostCore", "CVHostSources", "CVHostV4L2", "CVHostLines", "CVHostOutput", "CVHostPlugins", "CVHostAnalytics",
                                                 "CVHostMotion"],
            path: "benchmarks/cvhost-bench"),

        // Every parser of bytes someone else wrote, as a function of those bytes (fuzz/targets), and
        // libFuzzer's entry to them (scripts/fuzz.sh builds it with -sanitize=fuzzer; a plain build
        // replays files: `cvhost-fuzz TARGET FILE...`).
        .target(name: "CVHostFuzzTargets", dependencies: ["CVHostAnalytics", "CVHostCore", "CVHostEvidence", "CVHostFleet", "CVHostLines", "CVHostOutput", "CVHostPlugins",
                                                   "CVHostRun", "CVHostSources", "CVHostV4L2"], path: "fuzz/targets"),
        .executableTarget(name: "cvhost-fuzz", dependencies: ["CVHostFuzzTargets"], path: "fuzz/cvhost-fuzz"),

        // Plugins: one folder each, named as users load them.
        // (publicHeadersPath "." : a plugin exports no headers, but SwiftPM wants a header folder for C.)
        .target(name: "NullPlugin", dependencies: ["CVHostPluginABI"], path: "Plugins/null", publicHeadersPath: "."),
        // C on libzbar, and C++ on zxing-cpp behind an extern "C" boundary (barcode_zxing.cpp).
        // zxing-cpp is linked statically and its symbols kept inside the plugin (--exclude-libs).
        .target(
            name: "BarcodePlugin", dependencies: ["CVHostPluginABI"], path: "Plugins/barcode", publicHeadersPath: ".",
            cSettings: [.unsafeFlags(["-O2", "-fvisibility=hidden"])],
            cxxSettings: [.unsafeFlags(["-O2", "-fvisibility=hidden", "-I\(zxing)/include"])],
            linkerSettings: [
                .linkedLibrary("zbar"),
                .unsafeFlags(["\(zxing)/lib/libZXing.a", "-Xlinker", "--exclude-libs", "-Xlinker", "ALL"]),
            ]),
        // Swift: it imports only the C header's module, never the host's Swift modules. Its
        // descriptor is C (constant data in the file; Swift cannot emit one), its callbacks Swift.
        .target(name: "MotionPlugin", dependencies: ["CVHostPluginABI"], path: "Plugins/motion", exclude: ["descriptor"]),
        .target(name: "MotionPluginDescriptor", dependencies: ["CVHostPluginABI"], path: "Plugins/motion/descriptor", publicHeadersPath: "."),
        // C++ on OpenCV, and libfacedetection's CNN loaded at run time. Only the three OpenCV libraries
        // it uses are linked: `pkg-config --libs opencv4` would pull in all 55 and make loading the
        // plugin 30 times slower.
        .target(
            name: "FacePlugin", dependencies: ["CVHostPluginABI"], path: "Plugins/face", publicHeadersPath: ".",
            cxxSettings: [.unsafeFlags(["-I/usr/include/opencv4", "-O2", "-DCVHOST_FACEDETECT_BUILD_DIR=\"\(facedetect)\""])],
            linkerSettings: [.linkedLibrary("opencv_objdetect"), .linkedLibrary("opencv_imgproc"), .linkedLibrary("opencv_core")]),

        // Plugins written in Python, found by name (`--plugin detect`): each a folder of .py files, copied
        // as they are beside the executable (cvhost_PythonPlugins.resources/NAME/NAME.py) and run by the
        // user's python3 on cvhost's runtime. The detect plugin: the user's own ONNX model (onnxruntime).
        .target(name: "PythonPlugins", path: "Plugins/python", resources: [.copy("detect")]),

        // Fixtures made with real tools (cc, ffmpeg), real servers (mosquitto, nats-server, librdkafka's
        // mock cluster; NATS read with its C client) and a runner for the built binary.
        .target(name: "CVHostTestSupport", dependencies: ["CNATS"], path: "Tests/CVHostTestSupport"),
        .testTarget(name: "CVHostCoreTests", dependencies: ["CVHostCore", "CVHostTestSupport"]),
        .testTarget(name: "CVHostAnalyticsTests", dependencies: ["CVHostAnalytics", "CVHostLines", "CVHostTestSupport"]),
        .testTarget(name: "CVHostMotionTests", dependencies: ["CVHostMotion", "CVHostAnalytics", "CVHostCore"]),
        .testTarget(name: "CVHostEvidenceTests", dependencies: ["CVHostEvidence", "CVHostCore", "CVHostLines", "CVHostTestSupport", "CFFmpeg"]),
        .testTarget(name: "CVHostEventsTests", dependencies: ["CVHostEvents", "CVHostCore", "CVHostLines", "CVHostTestSupport"]),
        .testTarget(name: "CVHostOutputTests", dependencies: ["CVHostOutput", "CVHostLines", "CVHostCore", "CVHostTestSupport"]),
        .testTarget(name: "CVHostPluginsTests", dependencies: ["CVHostPlugins", "CVHostLines", "CVHostOutput", "CVHostCore", "CVHostTestSupport"]),
        .testTarget(name: "CVHostSourcesTests", dependencies: ["CVHostSources", "CVHostCore", "CVHostTestSupport"]),
        // Format selection, control parsing, plane layouts, MJPEG decoding; streaming itself is tested on vivid (EndToEndTests/CameraTests).
        .testTarget(name: "CVHostV4L2Tests", dependencies: ["CVHostV4L2", "CVHostCore", "CVHostTestSupport"]),
        // The HTTP server's handlers on NIOEmbedded's channel (no sockets, no sleeps: time is advanced
        // by hand), and the server itself on loopback sockets where the kernel's part matters.
        .testTarget(
            name: "CVHostHTTPTests",
            dependencies: [
                "CVHostHTTP", "CVHostLines", "CVHostCore", "CVHostTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]),
        // The run's settings, config file, exit codes and stops, as a library (no binary run).
        .testTarget(name: "CVHostRunTests", dependencies: ["CVHostRun", "CVHostLines", "CVHostOutput", "CVHostCore", "CVHostMotion", "CVHostTestSupport"]),
        // Where a site's inputs go, and its address (no server: the fleet's runs are in EndToEndTests/FleetTests).
        .testTarget(name: "CVHostFleetTests", dependencies: ["CVHostFleet"]),
        // Every fuzz seed and finding (fuzz/corpus, fuzz/findings) through its target: what a fuzz run found stays fixed.
        .testTarget(name: "FuzzRegressionTests", dependencies: ["CVHostFuzzTargets", "CVHostTestSupport"]),
        // Runs the built cvhost binary (swift build first) and checks its output and exit codes.
        .testTarget(name: "EndToEndTests", dependencies: ["CVHostTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
