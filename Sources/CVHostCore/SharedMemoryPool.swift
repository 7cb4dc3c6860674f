/// Where `PixelBuffer.allocate` takes its memory from once a plugin runs in a worker process: blocks
/// of shared memory, so that the frames cvhost makes (test pattern, conversions, decoded and turned
/// frames) reach the worker with no copy, each block mapped by the worker once. A block goes back to
/// the pool when the last pixel buffer using it goes, and is handed out again for the next buffer of
/// its size (a stream's frames are all one size), like CVPixelBufferPool: no new descriptor, mapping
/// or page faults per frame, here or in the worker.
///
/// Off until `enable()`: with every plugin in cvhost's own process, buffers stay on the heap and use
/// no descriptors.
public final class SharedMemoryPool: Sendable {
    public static let shared = SharedMemoryPool()

    /// Smaller buffers stay on the heap: copying them costs less than a descriptor and a mapping.
    static let minimumBytes = 64 * 1024
    /// Free blocks kept for reuse, at most; beyond either bound the oldest is released.
    static let maxFreeBlocks = 16
    static let maxFreeBytes = 256 << 20
    /// Blocks in use at once, at most: beyond it buffers come from the heap (and are copied for a
    /// worker) rather than taking every descriptor the process may open.
    static let maxBlocksInUse = 256

    private struct State {
        var enabled = false
        var free: [SharedMemoryBlock] = []
        var inUse = 0
        var failureLogged = false
    }
    private let state = Locked(State())

    /// From now on, buffers of `minimumBytes` or more are made in shared memory (and cameras
    /// export their buffers). Called when a plugin is to run in a worker process.
    public func enable() { state.withLock { $0.enabled = true } }

    public var isEnabled: Bool { state.withLock { $0.enabled } }

    /// A block of exactly `byteCount` bytes, reused when one is free; nil when the pool is off, the
    /// buffer is small, or shared memory cannot be had (then the heap will do).
    func take(byteCount: Int) -> Lease? {
        guard byteCount >= SharedMemoryPool.minimumBytes else { return nil }
        let reused = state.withLock { s -> SharedMemoryBlock?? in
            guard s.enabled, s.inUse < SharedMemoryPool.maxBlocksInUse else { return .none }
            s.inUse += 1
            guard let i = s.free.lastIndex(where: { $0.memory.size == byteCount }) else { return .some(nil) }
            return .some(s.free.remove(at: i))
        }
        guard case .some(let block) = reused else { return nil }
        if let block { return Lease(block, pool: self) }
        do {
            return Lease(try SharedMemoryBlock(byteCount: byteCount), pool: self)
        } catch {
            let first = state.withLock { s in
                s.inUse -= 1
                defer { s.failureLogged = true }
                return !s.failureLogged
            }
            if first { Log.warning("\(error.message); frames are copied for plugin workers instead") }
            return nil
        }
    }

    fileprivate func giveBack(_ block: SharedMemoryBlock) {
        let released: [SharedMemoryBlock] = state.withLock { s in
            s.inUse -= 1
            s.free.append(block)
            var bytes = s.free.reduce(0) { $0 + $1.memory.size }
            var dropped: [SharedMemoryBlock] = []
            while s.free.count > SharedMemoryPool.maxFreeBlocks || bytes > SharedMemoryPool.maxFreeBytes {
                let oldest = s.free.removeFirst()
                bytes -= oldest.memory.size
                dropped.append(oldest)
            }
            return dropped
        }
        _ = released  // unmapped and closed here, outside the lock
    }

    /// A pixel buffer's hold on a block: the block goes back to the pool with the last buffer using it.
    final class Lease: Sendable {
        let block: SharedMemoryBlock
        private let pool: SharedMemoryPool

        fileprivate init(_ block: SharedMemoryBlock, pool: SharedMemoryPool) {
            self.block = block
            self.pool = pool
        }

        deinit { pool.giveBack(block) }
    }
}
