import Glibc

/// A mutex around code that must run one call at a time (a write of a line, a worker's start), with
/// no value of its own to guard.
///
/// Why not `Locked<()>`: its zero-sized value has an address that is where the next object in
/// memory begins, so ThreadSanitizer took the exclusivity access to it for an access to that
/// object, and reported a "Swift access race" between two writers that the mutex keeps apart
/// (`scripts/sanitizer-runs.sh thread`: JSONLineWriter.writeLine). There is no value here to access.
///
/// `@unchecked Sendable`: its only state is the pthread mutex, which is made for sharing.
public final class SerialLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    public init() { pthread_mutex_init(mutex, nil) }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the lock held. Not reentrant.
    public func run<Result, E: Error>(_ body: () throws(E) -> Result) throws(E) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}
