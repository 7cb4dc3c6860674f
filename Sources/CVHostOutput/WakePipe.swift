import CVHostCore
import Glibc

/// A pipe that wakes a sink's thread from poll(2): written to (`wake`) by whoever has news for
/// it (a line in an empty queue, a client library's callback), read empty (`clear`) by the thread
/// before it looks. Both ends non-blocking: a full pipe is awake already.
final class WakePipe: Sendable {
    /// The end to poll for reading.
    let descriptor: Int32
    private let writer: Int32

    /// - Parameter purpose: what it is for, named when the process is out of descriptors (one line and exit 7, not a trap).
    init(_ purpose: String) {
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) != 0 { ResourceExhaustion.report("a pipe for \(purpose)", error: errno) }
        for fd in ends {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, O_NONBLOCK)
        }
        descriptor = ends[0]
        writer = ends[1]
    }

    deinit {
        Glibc.close(descriptor)
        Glibc.close(writer)
    }

    /// Makes `descriptor` readable.
    func wake() {
        var one: UInt8 = 1
        _ = Glibc.write(writer, &one, 1)
    }

    /// Makes `descriptor` unreadable again.
    func clear() {
        var bytes = [UInt8](repeating: 0, count: 64)
        while Glibc.read(descriptor, &bytes, bytes.count) == bytes.count {}
    }

    /// The writing end, for a library that writes to it itself (librdkafka).
    var writeDescriptor: Int32 { writer }
}
