import CV4L2Shim
import CVHostCore

/// Reads a node's formats: ENUM_FMT, then ENUM_FRAMESIZES and ENUM_FRAMEINTERVALS for each
/// (discrete, stepwise and continuous), as DeviceFormats.
enum V4L2FormatEnumeration {
    /// The pixel format cvhost hands to plugins for a device format: read as it is, or for MJPEG
    /// decoded by cvhost (to I420; grey JPEGs to gray8). nil: only libv4lconvert reads it (to I420).
    static func pixelFormat(for fourcc: UInt32) -> PixelFormat? {
        switch fourcc {
        case CV4L2Shim_PIX_FMT_MJPEG, CV4L2Shim_PIX_FMT_JPEG: .i420
        case CV4L2Shim_PIX_FMT_GREY: .gray8
        case CV4L2Shim_PIX_FMT_YUV420, CV4L2Shim_PIX_FMT_YUV420M: .i420
        case CV4L2Shim_PIX_FMT_NV12, CV4L2Shim_PIX_FMT_NV12M: .nv12
        case CV4L2Shim_PIX_FMT_YUYV: .yuyv
        case CV4L2Shim_PIX_FMT_RGB24: .rgb24
        case CV4L2Shim_PIX_FMT_BGR24: .bgr24
        default: nil
        }
    }

    /// Sizes offered for stepwise and continuous ranges: these common ones where they fit.
    static let commonSizes = [(320, 240), (640, 360), (640, 480), (800, 600), (1024, 768), (1280, 720), (1280, 1024),
                              (1920, 1080), (2560, 1440), (3840, 2160)]

    /// Every (format, size, frame rates) the node offers.
    static func formats(fd: V4L2Descriptor, type: V4L2BufferType) -> [DeviceFormat] {
        var result: [DeviceFormat] = []
        for index in 0..<UInt32(256) {
            var desc = v4l2_fmtdesc()
            desc.index = index
            desc.type = type.rawValue
            guard V4L2IO.tryIoctl(fd, CV4L2Shim_VIDIOC_ENUM_FMT, &desc) == 0 else { break }
            let fourcc = desc.pixelformat
            for (w, h) in sizes(fd: fd, fourcc: fourcc, type: type) {
                result.append(DeviceFormat(deviceFourCC: V4L2IO.fourCC(fourcc), pixelFormat: pixelFormat(for: fourcc), width: w,
                                           height: h, frameRateRanges: frameRates(fd: fd, fourcc: fourcc, width: w, height: h, type: type)))
            }
        }
        return result
    }

    static func sizes(fd: V4L2Descriptor, fourcc: UInt32, type: V4L2BufferType) -> [(Int, Int)] {
        var out: [(Int, Int)] = []
        for index in 0..<UInt32(512) {
            var s = v4l2_frmsizeenum()
            s.index = index
            s.pixel_format = fourcc
            guard V4L2IO.tryIoctl(fd, CV4L2Shim_VIDIOC_ENUM_FRAMESIZES, &s) == 0 else { break }
            if s.type == V4L2_FRMSIZE_TYPE_DISCRETE.rawValue {
                out.append((Int(s.discrete.width), Int(s.discrete.height)))
                continue
            }
            // Stepwise or continuous: one entry describes the whole range.
            let sw = s.stepwise
            let stepW = max(1, Int(sw.step_width)), stepH = max(1, Int(sw.step_height))
            for (w, h) in commonSizes
            where w >= sw.min_width && w <= sw.max_width && h >= sw.min_height && h <= sw.max_height
                && (w - Int(sw.min_width)) % stepW == 0 && (h - Int(sw.min_height)) % stepH == 0 {
                out.append((w, h))
            }
            if out.isEmpty { out.append((Int(sw.max_width), Int(sw.max_height))) }
            break
        }
        if out.isEmpty {
            // Drivers without ENUM_FRAMESIZES (HDMI inputs follow their timings): the current size.
            var f = v4l2_format()
            f.type = type.rawValue
            if V4L2IO.tryIoctl(fd, CV4L2Shim_VIDIOC_G_FMT, &f) == 0 {
                let layout = V4L2Layout(f, type: type)
                out.append((layout.width, layout.height))
            }
        }
        return out
    }

    static func frameRates(fd: V4L2Descriptor, fourcc: UInt32, width: Int, height: Int, type: V4L2BufferType) -> [FrameRateRange] {
        var out: [FrameRateRange] = []
        func fps(_ f: v4l2_fract) -> Double { f.numerator == 0 ? 0 : Double(f.denominator) / Double(f.numerator) }
        for index in 0..<UInt32(256) {
            var i = v4l2_frmivalenum()
            i.index = index
            i.pixel_format = fourcc
            i.width = UInt32(width)
            i.height = UInt32(height)
            guard V4L2IO.tryIoctl(fd, CV4L2Shim_VIDIOC_ENUM_FRAMEINTERVALS, &i) == 0 else { break }
            if i.type == V4L2_FRMIVAL_TYPE_DISCRETE.rawValue {
                let r = fps(i.discrete)
                out.append(FrameRateRange(minFrameRate: r, maxFrameRate: r))
            } else {
                // Longest interval = lowest rate.
                out.append(FrameRateRange(minFrameRate: fps(i.stepwise.max), maxFrameRate: fps(i.stepwise.min)))
                break
            }
        }
        if out.isEmpty {
            var p = v4l2_streamparm()
            p.type = type.rawValue
            if V4L2IO.tryIoctl(fd, CV4L2Shim_VIDIOC_G_PARM, &p) == 0 {
                let r = fps(p.parm.capture.timeperframe)
                if r > 0 { out.append(FrameRateRange(minFrameRate: r, maxFrameRate: r)) }
            }
        }
        return out.sorted { $0.maxFrameRate > $1.maxFrameRate }
    }
}
