import CVHostCore
import CVHostPluginABI

/// How one instance's frames reach its worker process. A frame whose planes all lie in shared
/// memory (cvhost's pooled pixel buffers, a camera's exported buffers) goes as it is: the worker
/// is sent each piece of memory once and maps it, and later frames in it cost no copy. Any other
/// frame is copied once into the instance's slot (one for the frame, one for the full frame beside
/// it, when the plugin asked for both; a pair for each frame of a batch). Memory cvhost has
/// released is forgotten by the worker the next time new memory is sent, so the worker holds no
/// more than cvhost does.
///
/// Used only from the instance's delivery worker thread.
final class FrameTransfer {
    /// Which of a call's frames: the one the plugin processes, or the full frame beside it.
    enum Slot: Int {
        case frame = 0, full
    }
    /// By a frame's place in its call (0 but in a batch) and Slot.
    private var slots: [Int: FrameSlot] = [:]
    /// What the current worker process has mapped, by id (SharedMemory.exists tells what was released since).
    private var sent: Set<UInt64> = []
    /// The worker process the memory was sent to.
    private(set) var generation: UInt64 = 0
    /// The memory of each plane of the last frame prepared (ordered() sends that frame again).
    private(set) var lastMemory: [UInt64] = []

    /// How a frame went.
    enum Way {
        case shared, copied
    }

    /// Points `frame`'s planes at shared memory (offsets, no pointers), copying it into the slot if
    /// it is not in shared memory already, and sends the worker what it has not mapped yet.
    /// - Parameters:
    ///   - generation: the worker process's (a new process has nothing mapped).
    ///   - slot: where a copy goes (the frame's memory is remembered, for ordered(), only for `.frame`).
    ///   - position: the frame's place in a batch (each has slots of its own).
    /// - Returns: how the frame went, and its planes' memory ids; nil when the worker is gone.
    /// - Throws: `PluginLoadError` when no shared memory can be had for a copy.
    func prepare(_ frame: inout cvhost_frame, pixels: PixelBuffer, channel: WorkerChannel,
                 generation: UInt64, slot which: Slot = .frame, position: Int = 0) throws(PluginLoadError) -> (way: Way, memory: [UInt64])? {
        if generation != self.generation {
            sent = []
            self.generation = generation
        }
        let count = Int(min(frame.plane_count, 4))
        let locations = pixels.planes.prefix(count).compactMap(\.shared)
        let way: Way
        let memory: [SharedMemory]
        if locations.count == count {
            way = .shared
            memory = locations.map(\.memory)
            withUnsafeMutableBytes(of: &frame.planes) { raw in
                let planes = raw.bindMemory(to: cvhost_plane.self)
                for i in 0..<count {
                    planes[i].data = nil
                    planes[i].offset = UInt64(locations[i].offset)
                }
            }
        } else {
            way = .copied
            let slot = try slot(position * 2 + which.rawValue, for: frame)
            slot.copy(into: &frame)
            memory = Array(repeating: slot.memory, count: count)
        }
        for m in memory where !sent.contains(m.id) {
            guard send(m, on: channel) else { return nil }
        }
        let ids = memory.map(\.id)
        if which == .frame { lastMemory = ids }
        return (way, ids)
    }

    /// The slot, replaced by a larger one when the frame does not fit.
    private func slot(_ key: Int, for frame: cvhost_frame) throws(PluginLoadError) -> FrameSlot {
        let needed = FrameSlot.bytes(for: frame)
        if let slot = slots[key], slot.memory.size >= needed { return slot }
        let made = try FrameSlot(size: max(needed, 64 * 1024))
        slots[key] = made
        return made
    }

    /// Sends `memory` to be mapped, after telling the worker to forget what cvhost has released.
    private func send(_ memory: SharedMemory, on channel: WorkerChannel) -> Bool {
        let released = sent.filter { !SharedMemory.exists($0) }
        if !released.isEmpty {
            guard channel.send(.forget(ids: Array(released))) else { return false }
            sent.subtract(released)
        }
        guard channel.send(.memory(id: memory.id, size: UInt64(memory.size)), fds: [memory.fd]) else { return false }
        sent.insert(memory.id)
        return true
    }
}
