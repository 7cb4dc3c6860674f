import Glibc

/// A mutex with one condition variable: what a bounded producer/consumer queue needs, and
/// what `Synchronization.Mutex` lacks (it has no way to wait).
///
/// `@unchecked Sendable`: all state lives in the pthread objects, which are made for sharing.
public final class ConditionLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let cond = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    public init() {
        pthread_mutex_init(mutex, nil)
        var attr = pthread_condattr_t()
        pthread_condattr_init(&attr)
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC)
        pthread_cond_init(cond, &attr)
        pthread_condattr_destroy(&attr)
    }

    deinit {
        pthread_cond_destroy(cond)
        pthread_mutex_destroy(mutex)
        cond.deallocate()
        mutex.deallocate()
    }

    public func lock() { pthread_mutex_lock(mutex) }
    public func unlock() { pthread_mutex_unlock(mutex) }

    /// Waits for a broadcast. Call with the lock held; returns with it held.
    public func wait() { pthread_cond_wait(cond, mutex) }

    /// Waits for a broadcast or until the monotonic clock reaches `deadlineNs`.
    /// - Returns: false when the deadline passed.
    @discardableResult
    public func wait(untilMonotonicNs deadlineNs: UInt64) -> Bool {
        var ts = timespec(tv_sec: Int(deadlineNs / 1_000_000_000), tv_nsec: Int(deadlineNs % 1_000_000_000))
        return pthread_cond_timedwait(cond, mutex, &ts) != ETIMEDOUT
    }

    public func broadcast() { pthread_cond_broadcast(cond) }

    @inline(__always)
    public func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock()
        defer { unlock() }
        return try body()
    }
}
