import Glibc
import Synchronization

/// Memory another process can map by its descriptor: a memfd cvhost made (SharedMemoryPool) or a
/// dmabuf a camera driver exported (VIDIOC_EXPBUF). A plugin's worker process (isolation=process)
/// maps it once and then reads every frame made in it with no copy.
///
/// Known by an id never reused in this process: descriptor numbers are reused as soon as they are
/// closed, so a worker that keyed its mappings by descriptor could read another frame's memory.
public final class SharedMemory: Sendable {
    public let id: UInt64
    /// Owned: closed when this goes.
    public let fd: Int32
    public let size: Int

    private static let lastID = Atomic<UInt64>(0)

    /// Takes ownership of `fd`, `size` bytes of mappable memory.
    public init(adopting fd: Int32, size: Int) {
        id = SharedMemory.lastID.add(1, ordering: .relaxed).newValue
        self.fd = fd
        self.size = size
    }

    deinit { close(fd) }

    /// Where a plane lies in shared memory.
    public struct Location: Sendable {
        public let memory: SharedMemory
        /// Of the plane's first byte, from the start of `memory`.
        public let offset: Int

        public init(memory: SharedMemory, offset: Int) {
            self.memory = memory
            self.offset = offset
        }
    }
}
