import CVHostCore
import Dispatch
import Synchronization

/// A device that delivers `count` small gray frames, each filled with its index, as fast as it
/// is asked (or failing after `failAfter` frames). Real frames through the real session; only
/// the pixel source is made up, because the core has no file or camera code of its own.
final class CountingDevice: CaptureDevice {
    let count: Int
    let failAfter: Int?
    /// Before this frame, the stream reports an interruption twice, then goes on.
    let interruptBefore: Int?
    let isLive: Bool
    let configurationLock = ConfigurationLock()
    var uniqueID: String { "counting" }
    var localizedName: String { "counting device" }
    var modelID: String { "test" }
    var kind: CaptureDeviceKind { .testPattern }
    var isConnected: Bool { true }
    var formats: [DeviceFormat] { [] }
    var activeFormat: DeviceFormat? { nil }

    init(count: Int, live: Bool = false, failAfter: Int? = nil, interruptBefore: Int? = nil) {
        self.count = count
        self.isLive = live
        self.failAfter = failAfter
        self.interruptBefore = interruptBefore
    }

    func setActiveFormat(_ format: DeviceFormat) throws {
        try configurationLock.require(for: "format", deviceName: localizedName)
    }

    func applyCaptureHints(_ hints: CaptureHints) throws -> [SettingReport] {
        try configurationLock.require(for: "hints", deviceName: localizedName)
        return reportHintsUnsupported(hints, reason: "no focus")
    }

    func openStream() throws -> FrameStream { Stream(count: count, failAfter: failAfter, interruptBefore: interruptBefore) }

    final class Stream: FrameStream, @unchecked Sendable {
        let count: Int
        let failAfter: Int?
        let interruptBefore: Int?
        var interruptionsLeft = 2
        var index = 0
        let cancelled = Atomic(false)

        init(count: Int, failAfter: Int?, interruptBefore: Int?) {
            self.count = count
            self.failAfter = failAfter
            self.interruptBefore = interruptBefore
        }

        func next() throws -> CapturedFrame? {
            if let failAfter, index == failAfter { throw CaptureError(.streamFailed, "device went away") }
            if index == interruptBefore, interruptionsLeft > 0 {
                interruptionsLeft -= 1
                throw CaptureInterruption(reason: "in use by another program")
            }
            guard index < count, !cancelled.load(ordering: .relaxed) else { return nil }
            let n = index
            index += 1
            let pb = PixelBuffer.allocate(format: .gray8, width: 8, height: 8, colorimetry: .jpeg) { planes, strides in
                for y in 0..<8 {
                    (planes[0] + y * strides[0]).initializeMemory(as: UInt8.self, repeating: UInt8(truncatingIfNeeded: n), count: 8)
                }
            }
            return CapturedFrame(pixelBuffer: pb, presentationTimeNs: Int64(n) * 33_333_333)
        }

        func cancel() { cancelled.store(true, ordering: .relaxed) }
        func close() {}
    }
}

/// Records what an output delivered, optionally taking time per frame.
final class RecordingDelegate: VideoDataOutputDelegate, Sendable {
    let delayMicroseconds: UInt32
    private let state = Mutex<(seqs: [UInt64], tickets: [UInt64], drops: [DropReason], finished: Int, concurrent: Int, maxConcurrent: Int)>(([], [], [], 0, 0, 0))

    init(delayMicroseconds: UInt32 = 0) { self.delayMicroseconds = delayMicroseconds }

    var sequences: [UInt64] { state.withLock { $0.seqs } }
    var tickets: [UInt64] { state.withLock { $0.tickets } }
    var drops: [DropReason] { state.withLock { $0.drops } }
    var finishedWorkers: Int { state.withLock { $0.finished } }
    var maxConcurrent: Int { state.withLock { $0.maxConcurrent } }

    func videoDataOutput(_ output: VideoDataOutput, didOutput sample: SampleBuffer, pixelBuffer: PixelBuffer,
                         context: DeliveryContext) {
        state.withLock { s in
            s.concurrent += 1
            s.maxConcurrent = max(s.maxConcurrent, s.concurrent)
        }
        if delayMicroseconds > 0 { usleep(delayMicroseconds) }
        state.withLock { s in
            s.concurrent -= 1
            s.seqs.append(sample.sequence)
            s.tickets.append(context.ticket)
        }
    }

    func videoDataOutput(_ output: VideoDataOutput, didDrop sample: SampleBuffer, reason: DropReason) {
        state.withLock { $0.drops.append(reason) }
    }

    func videoDataOutputDidFinish(_ output: VideoDataOutput, worker: Int) {
        state.withLock { $0.finished += 1 }
    }
}

import Glibc

/// A live device whose stream, once its first frame is read, blocks until it is cancelled and
/// then takes the broken-off read for a lost connection (as a network stream's may): throws an
/// interruption.
final class BrokenOffDevice: CaptureDevice {
    let configurationLock = ConfigurationLock()
    var uniqueID: String { "broken-off" }
    var localizedName: String { "broken-off device" }
    var modelID: String { "test" }
    var kind: CaptureDeviceKind { .stream }
    var isConnected: Bool { true }
    var isLive: Bool { true }
    var formats: [DeviceFormat] { [] }
    var activeFormat: DeviceFormat? { nil }
    /// Signalled when the stream blocks, waiting to be cancelled.
    let blocking = DispatchSemaphore(value: 0)

    func setActiveFormat(_ format: DeviceFormat) throws {}
    func applyCaptureHints(_ hints: CaptureHints) throws -> [SettingReport] { [] }
    func openStream() throws -> FrameStream { Stream(blocking: blocking) }

    final class Stream: FrameStream, @unchecked Sendable {
        let cancelled = DispatchSemaphore(value: 0)
        let blocking: DispatchSemaphore
        var sent = false
        init(blocking: DispatchSemaphore) { self.blocking = blocking }

        func next() throws -> CapturedFrame? {
            if !sent {
                sent = true
                let pb = PixelBuffer.allocate(format: .gray8, width: 8, height: 8, colorimetry: .jpeg) { _, _ in }
                return CapturedFrame(pixelBuffer: pb, presentationTimeNs: 0)
            }
            blocking.signal()
            cancelled.wait()
            throw CaptureInterruption(reason: "reading failed: Input/output error; reconnecting")
        }

        func cancel() { cancelled.signal() }
        func close() {}
    }
}
