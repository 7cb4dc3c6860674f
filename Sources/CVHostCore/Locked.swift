import Glibc

/// A value behind a lock, reached only through `withLock` (the shape of Synchronization.Mutex).
///
/// Why not Synchronization.Mutex: on Linux its lock lives in the standard library, which is not
/// built for ThreadSanitizer, so TSan sees none of its locking and reports every value behind one
/// as a race (`scripts/sanitizer-runs.sh thread`). A pthread mutex is intercepted by the
/// sanitizers, and costs the same when nobody else holds it.
///
/// `@unchecked Sendable`: `value` is touched only with `mutex` held.
public final class Locked<Value>: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private var value: Value

    public init(_ value: Value) {
        self.value = value
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value, the lock held. Not reentrant: `body` must not take it again.
    public func withLock<Result, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
