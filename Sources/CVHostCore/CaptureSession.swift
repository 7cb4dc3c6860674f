import Foundation

/// Runs the flow of frames from one input to its outputs (AVCaptureSession).
///
/// States:
///
///     stopped ──startRunning()──► running ──(end of input | limit | stopRunning() | error)──► stopped
///
/// `startRunning()` returns once the device streams and the outputs' workers run;
/// `stopRunning()` returns once every output has delivered its last frame. Inputs and outputs
/// are added and removed while stopped; `beginConfiguration()` / `commitConfiguration()`
/// apply a group of changes together.
///
/// Frames are read on the session's own capture thread and offered to every output; what
/// happens when an output is slow is the output's backpressure policy.
public final class CaptureSession: @unchecked Sendable {
    // @unchecked Sendable: every mutable field is read and written with `cond` held, except
    // `eventHandler`, which is set before the session starts.

    /// Called for every session event, on the thread that caused it (the caller of
    /// startRunning for `started`, the capture thread otherwise). Do not call stopRunning()
    /// from it; use requestStop(reason:).
    public var eventHandler: (@Sendable (SessionEvent) -> Void)?

    /// Stop after this many frames (nil: no limit).
    public var frameLimit: UInt64?

    /// Sees each frame on the capture thread before the outputs are offered it (`--motion`). Set
    /// before the session starts.
    public var analyzer: SampleAnalyzer?

    private let cond = ConditionLock()
    private var committed = Configuration()
    private var pending: Configuration?
    private var configurationDepth = 0
    private var state = State.stopped
    private var stopReason: StopReason?
    private var stream: FrameStream?
    private var framesCaptured: UInt64 = 0
    /// When the last few frames were read (monotonic ns): the input's frame rate and its last frame's age.
    private var recentFrames = RecentTimes()
    private var interrupted = false
    /// Capture ended (why, and when on the monotonic clock); the outputs are delivering their last frames.
    private var drainingSince: (reason: StopReason, ns: UInt64)?

    private struct Configuration {
        var inputs: [CaptureDeviceInput] = []
        var outputs: [VideoDataOutput] = []
    }

    private enum State { case stopped, starting, running, stopping }

    public init() {}

    // MARK: - Inputs and outputs

    public var inputs: [CaptureDeviceInput] { cond.withLock { (pending ?? committed).inputs } }
    public var outputs: [VideoDataOutput] { cond.withLock { (pending ?? committed).outputs } }

    public func addInput(_ input: CaptureDeviceInput) throws {
        try change { config in
            guard config.inputs.isEmpty else {
                throw CaptureError(.invalidState, "the session already has an input: one session per input")
            }
            config.inputs.append(input)
        }
    }

    public func addOutput(_ output: VideoDataOutput) throws {
        try change { config in
            guard !config.outputs.contains(where: { $0 === output }) else {
                throw CaptureError(.invalidState, "output \(output.label) is already in the session")
            }
            config.outputs.append(output)
        }
    }

    /// Starts a group of changes that `commitConfiguration()` applies together. Calls nest.
    public func beginConfiguration() {
        cond.withLock {
            if configurationDepth == 0 { pending = committed }
            configurationDepth += 1
        }
    }

    /// Applies the changes made since the matching `beginConfiguration()`.
    public func commitConfiguration() {
        cond.withLock {
            precondition(configurationDepth > 0, "commitConfiguration() without beginConfiguration()")
            configurationDepth -= 1
            if configurationDepth == 0, let p = pending {
                committed = p
                pending = nil
            }
        }
    }

    private func change(_ body: (inout Configuration) throws -> Void) throws {
        try cond.withLock {
            guard state == .stopped else {
                throw CaptureError(.invalidState, "inputs and outputs can be changed only while the session is stopped")
            }
            if pending != nil {
                try body(&pending!)
            } else {
                try body(&committed)
            }
        }
    }

    // MARK: - Running

    public var isRunning: Bool { cond.withLock { state == .running } }

    /// Running, but no frame comes (a camera or a stream that went quiet, until frames flow again).
    public var isInterrupted: Bool { cond.withLock { state == .running && interrupted } }

    /// Frames read from the device so far in this run.
    public var capturedFrameCount: UInt64 { cond.withLock { framesCaptured } }

    /// When the last frame was read (monotonic ns), nil before the first.
    public var lastFrameNs: UInt64? { cond.withLock { recentFrames.last } }

    /// Frames a second over the last frames read (up to `RecentTimes.count`), nil before two.
    public var recentFrameRate: Double? { cond.withLock { recentFrames.rate } }

    /// Opens the device, applies the outputs' capture hints, starts every output's workers and
    /// the capture thread, and emits `started`. Returns when all of that is done.
    /// - Throws: `CaptureError` when there is no input or the device cannot stream.
    public func startRunning() throws {
        let config: Configuration = try cond.withLock {
            guard state == .stopped else { throw CaptureError(.invalidState, "the session is already running") }
            guard configurationDepth == 0 else {
                throw CaptureError(.invalidState, "commitConfiguration() before startRunning()")
            }
            guard !committed.inputs.isEmpty else { throw CaptureError(.invalidState, "the session has no input") }
            state = .starting
            stopReason = nil
            framesCaptured = 0
            recentFrames = RecentTimes()
            return committed
        }
        let device = config.inputs[0].device
        let settings = applyHints(of: config.outputs, to: device)
        let opened: FrameStream
        do {
            opened = try device.openStream()
        } catch {
            cond.withLock { state = .stopped }
            throw error
        }
        for output in config.outputs { output.start(liveSource: device.isLive) }
        cond.withLock {
            stream = opened
            state = .running
        }
        eventHandler?(.started(device: DeviceSummary(device), format: device.activeFormat, settings: settings))
        SystemThread.start("cvhost.capture") { [self] in captureLoop(stream: opened, outputs: config.outputs) }
    }

    /// Asks the session to stop and returns at once; `waitUntilStopped()` waits for it.
    /// Safe from any thread, signal handlers' dispatch sources and event handlers included.
    public func requestStop(reason: StopReason = .requested) {
        let s: FrameStream? = cond.withLock {
            guard state == .running || state == .starting else { return nil }
            if stopReason == nil { stopReason = reason }
            cond.broadcast()
            return stream
        }
        s?.cancel()
    }

    /// Stops the session and returns when every output has delivered its last frame.
    public func stopRunning() {
        requestStop(reason: .requested)
        waitUntilStopped()
    }

    /// Capture has ended and the outputs are delivering their last frames: why it ended, and
    /// since when (monotonic ns). nil while capturing and once stopped.
    public var draining: (reason: StopReason, sinceNs: UInt64)? {
        cond.withLock { drainingSince.map { ($0.reason, $0.ns) } }
    }

    /// Blocks until the session is stopped (at the end of input, a limit, a stop request or an error).
    public func waitUntilStopped() {
        cond.withLock {
            while state != .stopped { cond.wait() }
        }
    }

    /// Blocks until the session is stopped or `seconds` pass. - Returns: true when stopped.
    public func waitUntilStopped(timeout seconds: Double) -> Bool {
        let deadline = HostClock.monotonicNs() + UInt64(max(0, seconds) * 1e9)
        return cond.withLock {
            while state != .stopped {
                if !cond.wait(untilMonotonicNs: deadline) { return state == .stopped }
            }
            return true
        }
    }

    /// The most frames a second any enabled output takes (its connection's frame-rate cap), 0 when
    /// one takes every frame (or none is enabled: nothing is known then).
    static func neededFrameRate(of outputs: [VideoDataOutput]) -> Double {
        var most = 0.0
        for output in outputs where output.connection.isEnabled {
            let interval = output.connection.videoMinFrameDuration
            if interval <= 0 { return 0 }
            most = max(most, 1 / interval)
        }
        return most
    }

    private func applyHints(of outputs: [VideoDataOutput], to device: CaptureDevice) -> [SettingReport] {
        let hints = CaptureHints.merged(outputs.map(\.captureHints))
        do {
            try device.lockForConfiguration()
        } catch {
            return hints.autoFocusRangeRestriction == .none ? [] : [
                SettingReport(setting: "auto_focus_range", requested: hints.autoFocusRangeRestriction.rawValue,
                              applied: nil, status: .failed, message: "\(error)"),
            ]
        }
        defer { device.unlockForConfiguration() }
        do {
            return try device.applyCaptureHints(hints)
        } catch {
            return [SettingReport(setting: "capture_hints", requested: "\(hints)", applied: nil, status: .failed,
                                  message: "\(error)")]
        }
    }

    private func captureLoop(stream: FrameStream, outputs: [VideoDataOutput]) {
        var sequence: UInt64 = 0
        var reason = StopReason.endOfInput
        var lost: [FrameLossReason: UInt64] = [:]
        let limit = frameLimit
        let analyzer = self.analyzer
        var needed: Double?
        while true {
            if let stop = cond.withLock({ stopReason }) {
                reason = stop
                break
            }
            // What the consumers take now (a plugin's max_fps can change while it runs): a stream
            // that decodes may then skip frames none of them will be given.
            let now = Self.neededFrameRate(of: outputs)
            if now != needed {
                stream.need(framesPerSecond: now, keyframesWillDo: analyzer == nil)
                needed = now
            }
            if let limit, sequence >= limit {
                reason = .frameLimit
                break
            }
            let frame: CapturedFrame?
            do {
                frame = try stream.next()
            } catch let interruption as CaptureInterruption {
                // A stream that cvhost's own stop broke off may take it for a lost connection:
                // the stop is why it ended, and a stop is never said to be an interruption.
                if let stop = cond.withLock({ stopReason }) {
                    reason = stop
                    break
                }
                let first = cond.withLock { () -> Bool in
                    defer { interrupted = true }
                    return !interrupted
                }
                if first { eventHandler?(.interrupted(reason: interruption.reason)) }
                continue
            } catch {
                // A stream cancelled by a stop may fail rather than end: the stop is why it ended.
                if let stop = cond.withLock({ stopReason }) {
                    reason = stop
                    break
                }
                let failure = error as? CaptureError ?? CaptureError(.streamFailed, "\(error)")
                eventHandler?(.runtimeError(failure))
                reason = .error
                break
            }
            guard let frame else {
                // A cancelled stream ends with nil too: prefer the reason the stop was asked for.
                reason = cond.withLock { stopReason } ?? .endOfInput
                break
            }
            let resumed = cond.withLock { () -> Bool in
                defer { interrupted = false }
                return interrupted
            }
            if resumed { eventHandler?(.interruptionEnded) }
            for (count, why) in [(frame.framesLostBefore, FrameLossReason.gap), (frame.corruptBefore, .corrupt)] where count > 0 {
                lost[why, default: 0] += count
                eventHandler?(.framesLost(count: count, beforeSequence: sequence, reason: why))
            }
            var sample = SampleBuffer(
                sequence: sequence, captureTimeNs: frame.captureTimeNs ?? HostClock.wallNs(),
                monotonicCaptureNs: frame.monotonicCaptureNs ?? HostClock.monotonicNs(), presentationTimeNs: frame.presentationTimeNs,
                pixelBuffer: frame.pixelBuffer, imagePath: frame.imagePath, isIndependent: frame.isIndependent)
            sequence += 1
            // What moved in it, seen before any output is offered it (the gates decide on it).
            if let analyzer { sample.motion = analyzer.analyze(sample) }
            cond.withLock {
                framesCaptured = sequence
                recentFrames.add(HostClock.monotonicNs())
            }
            if FrameTrace.enabled {
                FrameTrace.mark(ptsNs: sample.presentationTimeNs, "captured", atNs: sample.monotonicCaptureNs)
                FrameTrace.mark(ptsNs: sample.presentationTimeNs, "offered")
            }
            for output in outputs { output.offer(sample) }
        }
        cond.withLock {
            state = .stopping
            interrupted = false
            drainingSince = (reason, HostClock.monotonicNs())
        }
        stream.close()
        analyzer?.sessionEnded()
        // Drain: every frame already accepted by an output reaches its delegate.
        for output in outputs { output.finish() }
        let captured = sequence
        eventHandler?(.stopped(reason: reason, framesCaptured: captured, framesLost: lost))
        cond.withLock {
            state = .stopped
            self.stream = nil
            drainingSince = nil
            cond.broadcast()
        }
    }
}

/// The times of the last `count` events (frames read), for their rate and the last one's age.
struct RecentTimes {
    static let count = 32
    private var times: [UInt64] = []
    private var next = 0

    mutating func add(_ ns: UInt64) {
        if times.count < Self.count { times.append(ns) } else { times[next] = ns }
        next = (next + 1) % Self.count
    }

    var last: UInt64? { times.isEmpty ? nil : times[(next + times.count - 1) % times.count] }

    var rate: Double? {
        guard times.count >= 2, let last else { return nil }
        let first = times.count < Self.count ? times[0] : times[next]
        return last > first ? Double(times.count - 1) / (Double(last - first) / 1e9) : nil
    }
}
