import CFFmpeg
import CVHostCore
import Synchronization

/// Bounds FFmpeg's blocking calls (opening a URL, reading a packet): FFmpeg calls back into it
/// while it waits on the network, and gives up (AVERROR_EXIT) once the deadline has passed or the
/// read was cancelled. Without it a server that accepts and then sends nothing blocks for ever.
final class InterruptDeadline: Sendable {
    /// Monotonic ns after which FFmpeg gives up; 0 for none.
    private let deadline = Atomic<UInt64>(0)
    private let cancelled = Atomic(false)
    /// Cancelled with it: the stream's, for one of its parts that can also be stopped alone.
    private let parent: InterruptDeadline?

    init(parent: InterruptDeadline? = nil) {
        self.parent = parent
    }

    /// Gives the next blocking call `seconds` to finish.
    func arm(seconds: Double) { deadline.store(HostClock.monotonicNs() + UInt64(seconds * 1e9), ordering: .relaxed) }

    func disarm() { deadline.store(0, ordering: .relaxed) }

    /// Makes the blocking call under way, and every later one, give up at once (another thread).
    func cancel() { cancelled.store(true, ordering: .relaxed) }

    /// Ready for a new stream after a cancelled one.
    func reset() { cancelled.store(false, ordering: .relaxed) }

    var isCancelled: Bool { cancelled.load(ordering: .relaxed) || parent?.isCancelled == true }

    /// True when FFmpeg should give up now.
    var expired: Bool {
        if isCancelled { return true }
        let d = deadline.load(ordering: .relaxed)
        return d != 0 && HostClock.monotonicNs() >= d
    }

    /// FFmpeg's callback for `AVFormatContext.interrupt_callback`; `opaque` is this object,
    /// which the decoder keeps alive as long as the context.
    var callback: AVIOInterruptCB {
        AVIOInterruptCB(callback: interruptDeadlineExpired, opaque: Unmanaged.passUnretained(self).toOpaque())
    }
}

/// A plain function, not a closure: FFmpeg calls it from the capture thread (see FACTS: closures
/// built in top-level code must not be handed to C).
private func interruptDeadlineExpired(_ opaque: UnsafeMutableRawPointer?) -> Int32 {
    guard let opaque else { return 0 }
    return Unmanaged<InterruptDeadline>.fromOpaque(opaque).takeUnretainedValue().expired ? 1 : 0
}
