import Synchronization
import Testing
@testable import CVHostCore

@Suite("Capture session, outputs and back-pressure")
struct CaptureSessionTests {
    /// Runs `device` into the given outputs until it ends; returns the events.
    static func run(_ device: CaptureDevice, outputs: [VideoDataOutput], limit: UInt64? = nil) throws -> [SessionEvent] {
        let session = CaptureSession()
        let events = Mutex<[SessionEvent]>([])
        session.eventHandler = { e in events.withLock { $0.append(e) } }
        session.frameLimit = limit
        try session.addInput(CaptureDeviceInput(device: device))
        for o in outputs { try session.addOutput(o) }
        try session.startRunning()
        #expect(session.waitUntilStopped(timeout: 30), "session did not stop")
        return events.withLock { $0 }
    }

    @Test("block: a slow consumer gets every frame, in order, and nothing is dropped")
    func blockLosesNothing() throws {
        let output = VideoDataOutput(label: "slow")
        let delegate = RecordingDelegate(delayMicroseconds: 500)
        output.setSampleBufferDelegate(delegate)
        output.backpressure = .block
        let events = try CaptureSessionTests.run(CountingDevice(count: 100), outputs: [output])
        #expect(delegate.sequences == Array(0..<100))
        #expect(output.statistics.droppedTotal == 0)
        #expect(delegate.finishedWorkers == 1)
        guard case .stopped(let reason, let frames, _) = events.last else {
            Issue.record("last event is not stopped: \(events)")
            return
        }
        #expect(reason == .endOfInput && frames == 100)
    }

    @Test("drop-late: a slow consumer drops, a fast one beside it does not, and drops are counted")
    func dropLateIsolatesSlowConsumers() throws {
        let slow = VideoDataOutput(label: "slow"), fast = VideoDataOutput(label: "fast")
        let slowDelegate = RecordingDelegate(delayMicroseconds: 2000), fastDelegate = RecordingDelegate()
        slow.setSampleBufferDelegate(slowDelegate)
        fast.setSampleBufferDelegate(fastDelegate)
        slow.backpressure = .dropLate
        fast.backpressure = .block
        _ = try CaptureSessionTests.run(CountingDevice(count: 300), outputs: [slow, fast])
        #expect(fastDelegate.sequences.count == 300)
        let stats = slow.statistics
        #expect(stats.dropped[.late, default: 0] > 0)
        #expect(UInt64(slowDelegate.sequences.count) + stats.droppedTotal == 300)
        #expect(stats.offered == 300 && stats.delivered == UInt64(slowDelegate.sequences.count))
        // Delivered frames are still in order, with gaps where frames were dropped.
        #expect(slowDelegate.sequences == slowDelegate.sequences.sorted())
        #expect(stats.maxQueueDepth <= slow.maxQueuedFrames)
        #expect(slowDelegate.drops.allSatisfy { $0 == .late })
    }

    @Test("several workers: tickets are contiguous and in sequence order; one worker is never re-entered")
    func workersAndTickets() throws {
        let output = VideoDataOutput(label: "par")
        let delegate = RecordingDelegate(delayMicroseconds: 300)
        output.setSampleBufferDelegate(delegate)
        output.workerCount = 3
        output.backpressure = .block
        _ = try CaptureSessionTests.run(CountingDevice(count: 90), outputs: [output])
        #expect(delegate.tickets.sorted() == Array(0..<90))
        #expect(delegate.sequences.sorted() == Array(0..<90))
        #expect(delegate.finishedWorkers == 3)

        let serial = VideoDataOutput(label: "serial")
        let serialDelegate = RecordingDelegate(delayMicroseconds: 300)
        serial.setSampleBufferDelegate(serialDelegate)
        _ = try CaptureSessionTests.run(CountingDevice(count: 30), outputs: [serial])
        #expect(serialDelegate.maxConcurrent == 1)
    }

    @Test("frame-rate cap and disabled connections")
    func connectionControls() throws {
        let capped = VideoDataOutput(label: "capped"), off = VideoDataOutput(label: "off")
        let cappedDelegate = RecordingDelegate(), offDelegate = RecordingDelegate()
        capped.setSampleBufferDelegate(cappedDelegate)
        off.setSampleBufferDelegate(offDelegate)
        capped.connection.videoMinFrameDuration = 0.1  // the device is 30 fps: keep one in three
        off.connection.isEnabled = false
        _ = try CaptureSessionTests.run(CountingDevice(count: 30), outputs: [capped, off])
        #expect(cappedDelegate.sequences == [0, 3, 6, 9, 12, 15, 18, 21, 24, 27])
        #expect(capped.statistics.dropped[.frameRateCap] == 20)
        #expect(offDelegate.sequences.isEmpty && off.statistics.offered == 0)
    }

    @Test("frame limit, runtime error, and the order of events")
    func limitsAndErrors() throws {
        let output = VideoDataOutput(label: "o")
        output.setSampleBufferDelegate(RecordingDelegate())
        let limited = try CaptureSessionTests.run(CountingDevice(count: 100), outputs: [output], limit: 10)
        guard case .stopped(.frameLimit, 10, _) = limited.last else {
            Issue.record("expected frame_limit after 10 frames: \(limited)")
            return
        }
        let output2 = VideoDataOutput(label: "o2")
        output2.setSampleBufferDelegate(RecordingDelegate())
        let failed = try CaptureSessionTests.run(CountingDevice(count: 100, failAfter: 5), outputs: [output2])
        #expect(failed.count == 3)
        guard case .started = failed[0], case .runtimeError(let e) = failed[1], case .stopped(.error, 5, _) = failed[2] else {
            Issue.record("expected started, runtimeError, stopped(error): \(failed)")
            return
        }
        #expect(e.code == .streamFailed)
    }

    @Test("an interruption is reported once, ends with the next frame, and loses nothing")
    func interruption() throws {
        let output = VideoDataOutput(label: "o")
        let delegate = RecordingDelegate()
        output.setSampleBufferDelegate(delegate)
        let events = try CaptureSessionTests.run(CountingDevice(count: 10, interruptBefore: 4), outputs: [output])
        let names = events.map { e -> String in
            switch e {
            case .started: "started"
            case .interrupted: "interrupted"
            case .interruptionEnded: "ended"
            case .stopped: "stopped"
            default: "other"
            }
        }
        #expect(names == ["started", "interrupted", "ended", "stopped"])
        #expect(delegate.sequences == Array(0..<10))
    }

    @Test("a read that the stop broke off and the stream took for a lost connection is the stop: no interruption is said, the reason is the stop's")
    func stopIsNotAnInterruption() throws {
        let device = BrokenOffDevice()
        let session = CaptureSession()
        let events = Mutex<[SessionEvent]>([])
        session.eventHandler = { e in events.withLock { $0.append(e) } }
        try session.addInput(CaptureDeviceInput(device: device))
        let output = VideoDataOutput(label: "o")
        let delegate = RecordingDelegate()
        output.setSampleBufferDelegate(delegate)
        try session.addOutput(output)
        try session.startRunning()
        device.blocking.wait()
        session.requestStop(reason: .signal)
        #expect(session.waitUntilStopped(timeout: 30))
        let seen = events.withLock { $0 }
        #expect(!seen.contains { if case .interrupted = $0 { true } else { false } }, "\(seen)")
        #expect(seen.contains { if case .stopped(let reason, _, _) = $0 { reason == .signal } else { false } }, "\(seen)")
    }

    @Test("configuration: one input, changes only while stopped, begin/commit applies together")
    func configuration() throws {
        let session = CaptureSession()
        #expect(throws: CaptureError.self) { try session.startRunning() }
        let input = CaptureDeviceInput(device: CountingDevice(count: 1_000_000, live: true))
        try session.addInput(input)
        #expect(throws: CaptureError.self) { try session.addInput(CaptureDeviceInput(device: CountingDevice(count: 1))) }
        let a = VideoDataOutput(label: "a"), b = VideoDataOutput(label: "b")
        session.beginConfiguration()
        try session.addOutput(a)
        try session.addOutput(b)
        #expect(session.outputs.count == 2)
        session.commitConfiguration()
        #expect(session.outputs.count == 2)
        a.setSampleBufferDelegate(RecordingDelegate())
        b.setSampleBufferDelegate(RecordingDelegate())
        try session.startRunning()
        #expect(session.isRunning)
        let c = VideoDataOutput(label: "c")
        #expect(throws: CaptureError.self) { try session.addOutput(c) }
        #expect(throws: CaptureError.self) { try session.startRunning() }
        session.stopRunning()
        #expect(!session.isRunning)
        try session.addOutput(c)
        #expect(session.outputs.count == 3)
    }

    @Test("configuration lock: setting without it throws, a second lock throws")
    func configurationLock() throws {
        let device = CountingDevice(count: 1)
        #expect(throws: CaptureError.self) { try device.applyCaptureHints(CaptureHints()) }
        try device.lockForConfiguration()
        #expect(throws: CaptureError.self) { try device.lockForConfiguration() }
        let reports = try device.applyCaptureHints(CaptureHints(autoFocusRangeRestriction: .near))
        #expect(reports == [SettingReport(setting: "auto_focus_range", requested: "near", applied: nil, status: .unsupported,
                                          message: "no focus")])
        device.unlockForConfiguration()
        #expect(!device.configurationLock.isLocked)
    }

    @Test("merged hints: near wins, largest minimum size")
    func mergedHints() {
        let merged = CaptureHints.merged([
            CaptureHints(autoFocusRangeRestriction: .far, minWidth: 640, minHeight: 480),
            CaptureHints(autoFocusRangeRestriction: .near, minWidth: 320, minHeight: 720),
            CaptureHints(),
        ])
        #expect(merged == CaptureHints(autoFocusRangeRestriction: .near, minWidth: 640, minHeight: 720))
    }
}
