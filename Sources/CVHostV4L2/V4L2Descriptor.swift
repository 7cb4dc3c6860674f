import CV4L2Shim
import CVHostCore
import Glibc

/// An open V4L2 node that cannot be used once closed: every call after `close()` fails with
/// EBADF instead of reaching whatever the number was given to next (a camera unplugged and
/// back is opened again, and may get the same number). Calls hold its lock, so a close never
/// lands in the middle of one.
final class V4L2Descriptor: @unchecked Sendable {
    // @unchecked Sendable: the number is behind a lock.
    /// -1 once closed.
    private let number: Locked<Int32>

    /// Opens `path` for streaming (read-write, non-blocking). nil, with errno set, when it cannot be opened.
    init?(path: String) {
        let fd = Glibc.open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        number = Locked(fd)
    }

    deinit { close() }

    func close() {
        let fd = number.withLock { n in
            defer { n = -1 }
            return n
        }
        if fd >= 0 { _ = Glibc.close(fd) }
    }

    /// `ioctl(fd, request, arg)`, called again when a signal interrupted it (the shim). - Returns: 0, or the errno (EBADF once closed).
    func ioctl(_ request: UInt, _ arg: UnsafeMutableRawPointer) -> Int32 {
        number.withLock { n in
            guard n >= 0 else { return EBADF }
            let r = SystemCall.retryingNegated { CV4L2Shim_ioctl(n, request, arg) }
            return r < 0 ? -r : 0
        }
    }

    /// Maps `length` bytes of the driver's memory at `offset`. - Returns: the address, or the errno.
    func map(length: Int, offset: Int64) -> Result<UnsafeMutableRawPointer, V4L2Errno> {
        number.withLock { n in
            guard n >= 0 else { return .failure(V4L2Errno(code: EBADF)) }
            let address = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED, n, off_t(offset))
            guard let address, address != MAP_FAILED else { return .failure(V4L2Errno(code: errno)) }
            return .success(address)
        }
    }

    /// Waits up to `timeoutMs` for a frame: 1 ready, 0 not yet, -errno on error (-EBADF once
    /// closed). The wait itself does not hold the lock (buffers go back to the driver meanwhile);
    /// only the capture thread, which waits, closes a streaming camera's descriptor.
    func waitReadable(timeoutMs: Int32) -> Int32 {
        let n = number.withLock { $0 }
        return n < 0 ? -EBADF : SystemCall.retryingNegated { CV4L2Shim_wait_readable(n, timeoutMs) }
    }

    /// Runs `body` with the number while no close can happen (for libv4lconvert, which asks the
    /// device about itself when it is set up).
    func withNumber<R>(_ body: (Int32) -> R) -> R? {
        number.withLock { n in n < 0 ? nil : body(n) }
    }
}

/// An errno from a call on a descriptor.
struct V4L2Errno: Error {
    let code: Int32
}
