import CVHostCore
import Glibc

/// How to open and follow a live stream.
public struct StreamOptions: Sendable {
    /// RTSP's lower transport. nil: TCP (RTP inside the RTSP connection: through firewalls and NAT,
    /// no loss), and UDP without being asked when the server refuses TCP (461 Unsupported Transport).
    public var rtspTransport: String?
    /// How long opening may take, seconds.
    public var openTimeout: Double = 10
    /// Seconds without a packet before the session reports the stream interrupted.
    public var stallTimeout: Double = 2
    /// When the connection is lost: retry with backoff and go on (true), or end with an error.
    public var reconnect = false

    public init() {}
}

/// A stream as a capture device: an IP camera or server by URL (RTSP, HTTP MJPEG, HLS, RTMP, SRT,
/// UDP), live (frames arrive whether or not plugins keep up, so outputs drop late frames by
/// default), or a stream piped into standard input or a named pipe, read with FFmpeg. A frame's
/// capture time is its arrival; its media time is the stream's own.
public final class NetworkStreamDevice: CaptureDevice, DamageReporting, EncodedStreamSource, ConnectionHealthReporting {
    public let location: StreamLocation
    /// Its connection lost and made again (--reconnect), for the input's health.
    public let connectionHealth = ConnectionHealth()
    public let options: StreamOptions
    public let configurationLock = ConfigurationLock()
    /// Sees the stream's encoded packets as they are read (clips), when set before the session starts.
    public var packetObserver: EncodedPacketObserver? {
        get { observer.withLock { $0 } }
        set { observer.withLock { $0 = newValue } }
    }
    private let observer = Locked<EncodedPacketObserver?>(nil)
    /// Its format, as the first connection found it (nil: not connected yet).
    private let format: DeviceFormat?
    /// The decoder opened to learn the format, handed to the first stream: standard input and
    /// pipes cannot be opened twice, and a camera need not be asked twice.
    private let probe: Locked<SendableDecoder?>
    /// Why the first connection failed, when `reconnect` waits for the stream: a camera that is
    /// down when cvhost starts is an input that starts interrupted and connects when it can, while
    /// the run's other inputs go on.
    public let unreachableAtStart: String?
    /// Bounds and cancels the blocking calls of the probe and of the stream that takes it over.
    private let interrupt = InterruptDeadline()
    /// Damaged packets skipped while reading (FFmpeg conceals what it can).
    public var damagedPackets: Int { damage.value.load(ordering: .relaxed) }
    private let damage = DamageCount()

    public var uniqueID: String { "stream:\(location.display)" }
    public var localizedName: String { location.display }
    public let modelID: String
    public var kind: CaptureDeviceKind { .stream }
    public var isConnected: Bool { true }
    /// Network streams are live. A pipe's writer can wait for cvhost (the pipe fills and it
    /// blocks), so pipes are read like files: nothing dropped unless --backpressure drop-late.
    public var isLive: Bool { location.scheme != nil }
    public var formats: [DeviceFormat] { format.map { [$0] } ?? [] }
    public var activeFormat: DeviceFormat? { format }

    /// Connects and reads the stream's format. With `reconnect`, a network stream that cannot be
    /// reached now (refused, no such host, no answer) is not an error: it starts unconnected
    /// (`unreachableAtStart`), its health away, and connects when it can.
    /// - Throws: `.inputUnavailable` (refused, not found, unauthorized, no answer within the open
    ///   timeout) or `.unsupportedInput` (no video FFmpeg decodes), with a message that names the
    ///   location without its password.
    public init(location: StreamLocation, options: StreamOptions = StreamOptions()) throws {
        self.location = location
        self.options = options
        do {
            let decoder = try NetworkStreamDevice.open(location, options, interrupt: interrupt)
            modelID = "ffmpeg-\(decoder.codecName)"
            format = decoder.deviceFormat
            probe = Locked(SendableDecoder(decoder))
            unreachableAtStart = nil
        } catch let error as CaptureError where options.reconnect && location.scheme != nil && error.code == .inputUnavailable {
            modelID = "ffmpeg"
            format = nil
            probe = Locked(nil)
            unreachableAtStart = error.message
            connectionHealth.away(error.message, nextTryWallNs: HostClock.wallNs())
        }
    }

    public func setActiveFormat(_ format: DeviceFormat) throws {
        try configurationLock.require(for: "the active format", deviceName: localizedName)
        guard format == self.format else {
            throw CaptureError(.unsupported, "\(localizedName) offers only \(self.format.map(\.description) ?? "the format it sends once connected")")
        }
    }

    public func applyCaptureHints(_ hints: CaptureHints) throws -> [SettingReport] {
        try configurationLock.require(for: "capture hints", deviceName: localizedName)
        return reportHintsUnsupported(hints, reason: "a network stream has no focus control cvhost can reach")
    }

    public func openStream() throws -> FrameStream {
        let first = probe.withLock { p in
            defer { p = nil }
            return p?.decoder
        }
        interrupt.reset()
        let stream = NetworkFrameStream(device: self, interrupt: interrupt, damage: damage)
        if let first {
            stream.start(with: first)
        } else if let why = unreachableAtStart {
            stream.startUnconnected(why)
        } else {
            stream.start(with: try NetworkStreamDevice.open(location, options, interrupt: interrupt))
        }
        return stream
    }

    /// Opens a decoder on `location`: RTSP over TCP first, then UDP when the server refuses TCP.
    static func open(_ location: StreamLocation, _ options: StreamOptions, interrupt: InterruptDeadline) throws -> MediaDecoder {
        if location.scheme == nil {  // standard input, a named pipe
            let fd = try PipeDescriptor.open(location, timeout: options.openTimeout, interrupt: interrupt)
            do {
                return try MediaDecoder(url: "pipe:\(fd)", name: location.display, interrupt: interrupt, openTimeout: options.openTimeout,
                                        stallSeconds: options.stallTimeout, ownedDescriptor: fd == STDIN_FILENO ? nil : fd)
            } catch let error as CaptureError {
                if fd != STDIN_FILENO { close(fd) }
                throw CaptureError(error.code, error.message + " (a pipe cannot be rewound: send a format that needs no seeking, "
                                   + "e.g. MPEG-TS, Matroska or fragmented MP4)")
            }
        }
        let isRTSP = location.scheme == "rtsp" || location.scheme == "rtsps"
        func decoder(rtspTransport: String?) throws -> MediaDecoder {
            func open(framesOnArrival: Bool) throws -> MediaDecoder {
                try MediaDecoder(url: location.url, name: location.display, options: rtspOptions(rtspTransport), interrupt: interrupt,
                                 openTimeout: options.openTimeout, stallSeconds: options.stallTimeout, lowDelay: true,
                                 framesOnArrival: framesOnArrival)
            }
            guard isRTSP else { return try open(framesOnArrival: false) }
            let d = try open(framesOnArrival: true)
            return d.needsParser ? try open(framesOnArrival: false) : d
        }
        do {
            return try decoder(rtspTransport: isRTSP ? options.rtspTransport ?? "tcp" : nil)
        } catch let error as CaptureError
            where isRTSP && options.rtspTransport == nil && error.message.hasSuffix(ffmpegError(-EPROTONOSUPPORT))
        {
            // FFmpeg's word for "461 Unsupported Transport" in answer to SETUP.
            Log.info("\(location.display) refuses RTP over TCP (461 Unsupported Transport): reading it over UDP")
            return try decoder(rtspTransport: "udp")
        }
    }

    /// FFmpeg's options: the RTSP transport, if any. (Not fflags=nobuffer: it throws away the
    /// packets read while probing the stream, and with them the first key frame.)
    private static func rtspOptions(_ transport: String?) -> [(String, String)] {
        transport.map { [("rtsp_transport", $0)] } ?? []
    }
}

/// A decoder handed from the device's probe to its first stream, on another thread.
private struct SendableDecoder: @unchecked Sendable {
    // @unchecked Sendable: handed over once under the device's mutex, then used by one thread.
    let decoder: MediaDecoder
    init(_ decoder: MediaDecoder) { self.decoder = decoder }
}

/// Frames of a live stream. A stall is an interruption; a lost connection is an error, or with
/// `reconnect` an interruption and a new connection with backoff (0.5 s doubling up to 10 s)
/// until frames flow again, at whatever size the source now sends.
final class NetworkFrameStream: FrameStream, @unchecked Sendable {
    // @unchecked Sendable: `decoder` and `backoff` are used by the capture thread only; cancel()
    // touches only the atomic interrupt.
    private let interrupt: InterruptDeadline
    private let device: NetworkStreamDevice
    private let damage: DamageCount
    private var decoder: MediaDecoder?
    private var backoff = 0.5
    /// The decoder's frames dropped whole, as far as they were told with a frame (corruptBefore).
    private var droppedWholeTold = 0

    init(device: NetworkStreamDevice, interrupt: InterruptDeadline, damage: DamageCount) {
        self.device = device
        self.interrupt = interrupt
        self.damage = damage
    }

    /// What the consumers take (need(framesPerSecond:)), for a decoder of a new connection too.
    private var neededFrameRate: Double = 0, keyframesWillDo = false

    func need(framesPerSecond fps: Double, keyframesWillDo: Bool) {
        neededFrameRate = fps
        self.keyframesWillDo = keyframesWillDo
        decoder?.need(framesPerSecond: fps, keyframesWillDo: keyframesWillDo)
    }

    func start(with decoder: MediaDecoder) {
        decoder.packetObserver = device.packetObserver
        self.decoder = decoder
    }

    /// The stream could not be reached at start (`why`): its first read says it is interrupted,
    /// the next ones connect with backoff, as after a lost connection.
    func startUnconnected(_ why: String) {
        notConnectedYet = why
    }

    /// Why the stream is not connected at start, until its first read has said so.
    private var notConnectedYet: String?

    func next() throws -> CapturedFrame? {
        if let why = notConnectedYet {
            notConnectedYet = nil
            throw CaptureInterruption(reason: "\(why); reconnecting")
        }
        while !interrupt.isCancelled {
            guard let decoder = try connected() else { continue }
            do {
                defer { damage.value.store(decoder.damaged, ordering: .relaxed) }
                if let (pixels, pts) = try decoder.nextFrame() {
                    backoff = 0.5
                    let dropped = decoder.framesDroppedWhole - droppedWholeTold
                    droppedWholeTold = decoder.framesDroppedWhole
                    return CapturedFrame(pixelBuffer: pixels, presentationTimeNs: pts, corruptBefore: UInt64(dropped))
                }
                if interrupt.isCancelled || !device.location.endMeansDisconnect { return nil }
                try lost("\(device.location.display) ended the stream")
            } catch let stall as StreamStalled {
                if interrupt.isCancelled { return nil }
                throw CaptureInterruption(reason: "no data from \(device.location.display) for \(formatSeconds(stall.seconds))")
            } catch let error as CaptureError where error.code == .streamFailed {
                // A read that cvhost's own stop broke off (its interrupt) is the end, not a lost
                // connection: a stop is never reported as an interruption or an error.
                if interrupt.isCancelled { return nil }
                try lost(error.message)
            }
        }
        return nil
    }

    /// The connection is gone: an error, or with reconnect an interruption and a new connection.
    private func lost(_ why: String) throws {
        decoder = nil
        droppedWholeTold = 0
        guard device.options.reconnect else { throw CaptureError(.disconnected, "\(why): the connection is lost (--reconnect waits for it)") }
        device.connectionHealth.away(why, nextTryWallNs: HostClock.wallNs())
        throw CaptureInterruption(reason: "\(why); reconnecting")
    }

    /// The decoder, connecting again first if the connection was lost (nil: not yet, try again).
    private func connected() throws -> MediaDecoder? {
        if let decoder { return decoder }
        do {
            decoder = try NetworkStreamDevice.open(device.location, device.options, interrupt: interrupt)
            decoder?.packetObserver = device.packetObserver
            decoder?.need(framesPerSecond: neededFrameRate, keyframesWillDo: keyframesWillDo)
            device.connectionHealth.back()
            Log.info("\(device.location.display): connected again")
            return decoder
        } catch let error as CaptureError {
            Log.debug("\(error.message); next try in \(formatSeconds(backoff))")
            device.connectionHealth.away(error.message, nextTryWallNs: HostClock.wallNs() + Int64(backoff * 1e9))
            let until = HostClock.monotonicNs() + UInt64(backoff * 1e9)
            while !interrupt.isCancelled && HostClock.monotonicNs() < until { usleep(50_000) }
            backoff = min(backoff * 2, 10)
            return nil
        }
    }

    func cancel() { interrupt.cancel() }

    func close() { decoder = nil }
}
