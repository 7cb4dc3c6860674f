import CVHostCore
import CVHostPluginABI

/// Where a frame that is not in shared memory (a decoder's own frame, a converter's output) is
/// copied for an instance's worker process: one block of shared memory per instance, registered
/// with the worker once and reused for every such frame; replaced by a larger one when a frame does
/// not fit. Planes at 64-byte aligned offsets, rows as they are.
final class FrameSlot {
    let block: SharedMemoryBlock
    var memory: SharedMemory { block.memory }

    init(size: Int) throws(PluginLoadError) {
        do {
            block = try SharedMemoryBlock(byteCount: size, name: "cvhost-frame-slot")
        } catch {
            throw PluginLoadError(.createFailed, "\(error.message) for a plugin worker")
        }
    }

    /// Bytes a frame needs in a slot.
    static func bytes(for frame: cvhost_frame) -> Int {
        withUnsafeBytes(of: frame.planes) { raw in
            raw.bindMemory(to: cvhost_plane.self).prefix(Int(min(frame.plane_count, 4))).reduce(0) { $0 + align(Int($1.length)) }
        }
    }

    private static func align(_ n: Int) -> Int { (n + 63) & ~63 }

    /// Copies the frame's planes in and points them at the copies instead: offsets into the slot
    /// (the worker adds its mapping's address).
    func copy(into frame: inout cvhost_frame) {
        var offset = 0
        let count = Int(min(frame.plane_count, 4))
        withUnsafeMutableBytes(of: &frame.planes) { raw in
            let planes = raw.bindMemory(to: cvhost_plane.self)
            for i in 0..<count {
                let length = Int(planes[i].length)
                if let data = planes[i].data { (block.base + offset).copyMemory(from: data, byteCount: length) }
                planes[i].data = nil
                planes[i].offset = UInt64(offset)
                offset += FrameSlot.align(length)
            }
        }
    }
}
