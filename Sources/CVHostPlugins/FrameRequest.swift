import CVHostCore
import CVHostPluginABI
import Glibc

/// Frames at a size a plugin asked for in create() (ABI 2.2, `host->request_frames`; a Python
/// plugin's `self.request_frames`): what the runner sets its output's scaling and format to.
public struct FrameRequest: Equatable, Sendable, CustomStringConvertible {
    public let scaling: FrameScaling
    /// One of the plugin's declared formats; nil: the one cvhost chooses.
    public let pixelFormat: PixelFormat?
    /// The captured picture at its own size as well, in the same format (ABI 2.3, cvhost_frame.full).
    public let fullFrame: Bool
    /// When gated on motion, the frame's motion regions squared to this size, with the full frame (ABI 2.4).
    public let motionRegions: Bool

    public var description: String {
        scaling.description + (pixelFormat.map { " \($0)" } ?? "") + (fullFrame ? " and the full frame" : "") + (motionRegions ? " and motion regions" : "")
    }

    static let knownFlags = UInt32(CVHOST_FRAME_REQUEST_FULL_FRAME) | UInt32(CVHOST_FRAME_REQUEST_MOTION_REGIONS)

    /// The request a plugin made, checked: nil for a size out of range, an unknown resize, a pad
    /// over 255, a format the plugin did not declare, or a flag cvhost does not know.
    init?(width: UInt32, height: UInt32, resize: UInt32, pad: UInt32, pixelFormat: UInt32, flags: UInt32, declared: [PixelFormat]) {
        guard FrameScaling.sides.contains(Int(width)), FrameScaling.sides.contains(Int(height)), pad <= 255,
              flags & ~Self.knownFlags == 0 else { return nil }
        fullFrame = flags & UInt32(CVHOST_FRAME_REQUEST_FULL_FRAME) != 0
        motionRegions = flags & UInt32(CVHOST_FRAME_REQUEST_MOTION_REGIONS) != 0
        let mode: FrameScaling.Mode
        switch resize {
        case CVHOST_RESIZE_STRETCH.rawValue: mode = .stretch
        case CVHOST_RESIZE_LETTERBOX.rawValue: mode = .letterbox(pad: UInt8(pad))
        default: return nil
        }
        if pixelFormat == 0 {
            self.pixelFormat = nil
        } else {
            guard let f = PixelFormat(rawValue: pixelFormat), declared.contains(f) else { return nil }
            self.pixelFormat = f
        }
        scaling = FrameScaling(width: Int(width), height: Int(height), mode: mode)
    }

    /// As the worker protocol's `ready` carries it: cvhost_frame_request's width, height, resize,
    /// pad, pixel format and flags.
    var fields: [UInt32] {
        let (resize, pad): (UInt32, UInt32) = switch scaling.mode {
        case .stretch: (CVHOST_RESIZE_STRETCH.rawValue, 0)
        case .letterbox(let pad): (CVHOST_RESIZE_LETTERBOX.rawValue, UInt32(pad))
        }
        return [UInt32(scaling.width), UInt32(scaling.height), resize, pad, pixelFormat?.rawValue ?? 0,
                (fullFrame ? UInt32(CVHOST_FRAME_REQUEST_FULL_FRAME) : 0) | (motionRegions ? UInt32(CVHOST_FRAME_REQUEST_MOTION_REGIONS) : 0)]
    }

    /// How many `fields` there are.
    static let fieldCount = 6

    /// The request `ready` carried (`fields`), checked as a plugin's own request is.
    init?(fields f: [UInt32], declared: [PixelFormat]) {
        guard f.count == Self.fieldCount else { return nil }
        self.init(width: f[0], height: f[1], resize: f[2], pad: f[3], pixelFormat: f[4], flags: f[5], declared: declared)
    }
}

/// What the instances of one plugin in one process asked for: the first request, which every
/// other instance's must equal. Requests are taken only while create() runs (HostServices).
final class FrameRequests: @unchecked Sendable {
    // @unchecked Sendable: the request is behind a lock.
    let declared: [PixelFormat]
    private let made = Locked<FrameRequest?>(nil)

    init(declared: [PixelFormat]) {
        self.declared = declared
    }

    var request: FrameRequest? { made.withLock { $0 } }

    /// - Returns: 0, -EINVAL for a request that is not valid, -EEXIST for one that differs from another instance's.
    func take(_ r: cvhost_frame_request) -> Int32 {
        // A 2.2 plugin's request ends before `flags` (offset 24): read as none.
        guard r.struct_size >= 24,
              let request = FrameRequest(width: r.width, height: r.height, resize: r.resize, pad: r.pad, pixelFormat: r.pixel_format,
                                         flags: r.struct_size >= UInt32(MemoryLayout<cvhost_frame_request>.size) ? r.flags : 0,
                                         declared: declared)
        else { return -EINVAL }
        return made.withLock { made in
            if let made, made != request { return -EEXIST }
            made = request
            return 0
        }
    }
}
