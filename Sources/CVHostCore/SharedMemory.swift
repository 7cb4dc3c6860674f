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
    /// The ids of the memory that exists now: what a worker was sent and may unmap once it is gone.
    /// (Asked by id, not through weak references: a weak reference's side table is pointed to only
    /// by tagged bits of the object's reference count, which LeakSanitizer cannot follow, so every
    /// pooled memory a worker had been sent was reported leaked at exit.)
    private static let liveIDs = Locked(Set<UInt64>())

    /// Takes ownership of `fd`, `size` bytes of mappable memory.
    public init(adopting fd: Int32, size: Int) {
        id = SharedMemory.lastID.add(1, ordering: .relaxed).newValue
        self.fd = fd
        self.size = size
        SharedMemory.liveIDs.withLock { _ = $0.insert(id) }
    }

    deinit {
        SharedMemory.liveIDs.withLock { _ = $0.remove(id) }
        close(fd)
    }

    /// Whether the memory with `id` still exists (ids are never reused).
    public static func exists(_ id: UInt64) -> Bool { liveIDs.withLock { $0.contains(id) } }

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
