import Glibc

/// The two clocks cvhost stamps frames with.
public enum HostClock {
    /// Nanoseconds on CLOCK_MONOTONIC: for durations and latency, never for display.
    @inline(__always)
    public static func monotonicNs() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }

    /// Nanoseconds since the Unix epoch on CLOCK_REALTIME: the capture time users see.
    @inline(__always)
    public static func wallNs() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) &* 1_000_000_000 &+ Int64(ts.tv_nsec)
    }

    /// Sleeps until the monotonic clock reaches `deadlineNs` (returns at once if it has passed).
    public static func sleep(untilMonotonicNs deadlineNs: UInt64) {
        var ts = timespec(tv_sec: Int(deadlineNs / 1_000_000_000), tv_nsec: Int(deadlineNs % 1_000_000_000))
        SystemCall.retryingReturned { clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) }
    }
}
