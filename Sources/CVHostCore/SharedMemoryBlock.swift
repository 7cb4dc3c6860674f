import CSharedMemory
import Glibc

/// Shared memory cvhost made (a memfd) and mapped for writing: a pooled pixel buffer's memory, or
/// the slot a frame is copied into for a plugin's worker process. Other processes map it read-only.
public final class SharedMemoryBlock: @unchecked Sendable {
    // @unchecked Sendable: `base` is fixed; its bytes are written by one owner at a time.
    public let memory: SharedMemory
    public let base: UnsafeMutableRawPointer

    /// - Throws: `CaptureError` (.unsupported) when the system gives no shared memory (descriptors
    ///   or memory exhausted, a kernel without memfd).
    public init(byteCount: Int, name: String = "cvhost-pixels") throws(CaptureError) {
        let fd = cvhost_shared_memory_create(name, byteCount)
        guard fd >= 0 else { throw CaptureError(.unsupported, "cannot make shared memory", cause: Errno(rawValue: -fd)) }
        guard let p = mmap(nil, byteCount, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), p != MAP_FAILED else {
            let e = Errno.current
            close(fd)
            throw CaptureError(.unsupported, "cannot map shared memory", cause: e)
        }
        // From here on other mappings (a worker's) can only read; this one still writes.
        _ = cvhost_shared_memory_seal_writes(fd)
        memory = SharedMemory(adopting: fd, size: byteCount)
        base = p
    }

    deinit { munmap(base, memory.size) }
}
