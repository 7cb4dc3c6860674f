import Glibc

/// Reference-counted image memory: every consumer that takes the same pixel format reads the
/// same bytes, never a per-consumer copy (the role of CVPixelBuffer).
///
/// A pixel buffer is immutable once made. Conversions to other formats (and mirrored or rotated
/// copies) are made on first request and cached on the buffer, so each is produced at most once
/// per frame however many consumers ask for it.
///
/// `@unchecked Sendable`: the plane pointers are written once in `init` and only read after;
/// the memory they point into is kept alive by `owner`; the conversion cache is behind a lock.
public final class PixelBuffer: @unchecked Sendable {
    /// One plane of pixel data.
    public struct Plane: @unchecked Sendable {
        public let base: UnsafeRawPointer
        public let bytesPerRow: Int
        public let rows: Int
        /// Samples per row in this plane (the width of a chroma plane is half the frame's).
        public let samplesPerRow: Int
        /// Where the plane lies in memory another process can map, when it does (nil: private
        /// memory, which a plugin's worker process gets a copy of).
        public let shared: SharedMemory.Location?

        public init(base: UnsafeRawPointer, bytesPerRow: Int, rows: Int, samplesPerRow: Int, shared: SharedMemory.Location? = nil) {
            self.base = base
            self.bytesPerRow = bytesPerRow
            self.rows = rows
            self.samplesPerRow = samplesPerRow
            self.shared = shared
        }
    }

    public let format: PixelFormat
    public let width: Int
    public let height: Int
    public let planes: [Plane]
    /// The range and matrix of its YUV samples (for RGB: full range, and the matrix of the YUV it was made from).
    public let colorimetry: Colorimetry

    /// Keeps the memory behind `planes` alive: an allocation, a decoder's frame, a parent buffer.
    private let owner: AnyObject
    /// What a cached copy is: a pixel format, turned or not, at its own size or scaled.
    private struct Variant: Hashable {
        let format: PixelFormat
        let orientation: VideoOrientation
        var scaling: FrameScaling? = nil
    }
    private let conversions = Locked<[Variant: PixelBuffer]>([:])

    /// Wraps memory that `owner` keeps alive. The planes must match `format`'s layout.
    public init(format: PixelFormat, width: Int, height: Int, planes: [Plane], colorimetry: Colorimetry, owner: AnyObject) {
        precondition(planes.count == format.planeLayout(width: width, height: height).count, "plane count for \(format)")
        self.format = format
        self.width = width
        self.height = height
        self.planes = planes
        self.colorimetry = colorimetry
        self.owner = owner
    }

    /// Allocates a buffer with tightly packed planes (rows padded to 16 bytes) and lets `fill`
    /// write its pixels before the buffer is shared. The memory is shared memory from the pool
    /// when it is on (a plugin runs in a worker process), else the heap's.
    public static func allocate(
        format: PixelFormat, width: Int, height: Int, colorimetry: Colorimetry,
        fill: (_ planes: [UnsafeMutableRawPointer], _ bytesPerRow: [Int]) throws -> Void
    ) rethrows -> PixelBuffer {
        let layout = format.planeLayout(width: width, height: height)
        let strides = layout.map { ($0.rowBytes + 15) & ~15 }
        let sizes = zip(strides, layout).map { $0 * $1.rows }
        let byteCount = sizes.reduce(0, +)
        let lease = SharedMemoryPool.shared.take(byteCount: byteCount)
        let owner: AnyObject, start: UnsafeMutableRawPointer
        if let lease {
            (owner, start) = (lease, lease.block.base)
        } else {
            let heap = Allocation(byteCount: byteCount)
            (owner, start) = (heap, heap.pointer)
        }
        var offsets: [Int] = []
        var offset = 0
        for size in sizes {
            offsets.append(offset)
            offset += size
        }
        try fill(offsets.map { start + $0 }, strides)
        let planes = (0..<layout.count).map { i in
            Plane(base: UnsafeRawPointer(start + offsets[i]), bytesPerRow: strides[i], rows: layout[i].rows,
                  samplesPerRow: layout[i].samplesPerRow,
                  shared: lease.map { SharedMemory.Location(memory: $0.block.memory, offset: offsets[i]) })
        }
        return PixelBuffer(format: format, width: width, height: height, planes: planes, colorimetry: colorimetry, owner: owner)
    }

    /// This image in `target` format: itself, a zero-copy view (gray8 from a luma-first format),
    /// or a converted copy made once and cached for every later caller.
    public func converted(to target: PixelFormat) -> PixelBuffer {
        if target == format { return self }
        if format.readsAs(target) {
            // The Y plane as it is: no copy. The view keeps this buffer alive.
            return PixelBuffer(format: .gray8, width: width, height: height, planes: [planes[0]], colorimetry: colorimetry, owner: self)
        }
        let key = Variant(format: target, orientation: .identity)
        return conversions.withLock { cache in
            if let done = cache[key] { return done }
            let made = PixelConverter.convert(self, to: target)
            cache[key] = made
            return made
        }
    }

    /// This image in `target` format, mirrored and rotated as `orientation` says: made once and
    /// cached for every later caller, like a conversion. (YUYV turned a quarter is turned in
    /// I420 and converted back: its pixel pairs cannot be split.)
    public func converted(to target: PixelFormat, orientation: VideoOrientation) -> PixelBuffer {
        if orientation.isIdentity { return converted(to: target) }
        let direct = PixelOrienter.canOrient(target, orientation)
        // What it is made from, got before taking the lock (getting it may take the lock too).
        let from = direct ? converted(to: target) : converted(to: .i420, orientation: orientation)
        let key = Variant(format: target, orientation: orientation)
        return conversions.withLock { cache in
            if let done = cache[key] { return done }
            let made = direct ? PixelOrienter.orient(from, orientation) : PixelConverter.convert(from, to: target)
            cache[key] = made
            return made
        }
    }

    /// This image turned as `orientation` says, then scaled as `scaling` says into `target`
    /// format: made once and cached, like a conversion (every consumer that asks for the same
    /// size, mode and format reads the same bytes).
    public func scaled(_ scaling: FrameScaling, to target: PixelFormat, orientation: VideoOrientation = .identity) -> PixelBuffer {
        // Turned first (in a format that turns with no loss: its own, or I420), then scaled.
        let from = orientation.isIdentity ? self
            : converted(to: PixelOrienter.canOrient(format, orientation) ? format : .i420, orientation: orientation)
        let key = Variant(format: target, orientation: orientation, scaling: scaling)
        return conversions.withLock { cache in
            if let done = cache[key] { return done }
            let made = PixelScaler.scale(from, to: target, scaling)
            cache[key] = made
            return made
        }
    }

    /// The number of conversions made so far (for tests and metrics).
    public var cachedConversionCount: Int { conversions.withLock { $0.count } }
}

/// Heap memory released when the last buffer using it goes away. Memory the system refuses ends
/// the run with a message (ResourceExhaustion) rather than Swift's trap.
final class Allocation {
    let pointer: UnsafeMutableRawPointer

    init(byteCount: Int) {
        let size = (max(byteCount, 1) + 63) & ~63
        guard let p = aligned_alloc(64, size) else {
            ResourceExhaustion.report("memory for a frame (\(byteCount) bytes)", error: ENOMEM)
        }
        pointer = p
    }

    deinit { free(pointer) }
}
