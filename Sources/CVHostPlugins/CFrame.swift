import CVHostCore
import CVHostPluginABI

extension cvhost_frame {
    /// The C frame a plugin's process() receives for a delivered frame: borrowed pointers into
    /// `pixels`, which must outlive every use of the frame.
    /// - Parameters:
    ///   - deliveryIndex: the frame's place among the frames delivered to this --plugin.
    ///   - placement: where the captured picture lies in `pixels`, and its size (VideoDataOutput.content).
    init(_ sample: SampleBuffer, _ pixels: PixelBuffer, deliveryIndex: UInt64,
         placement: (content: FrameScaling.Content, sourceWidth: Int, sourceHeight: Int)) {
        self.init()
        struct_size = UInt32(MemoryLayout<cvhost_frame>.size)
        pixel_format = pixels.format.rawValue
        width = UInt32(pixels.width)
        height = UInt32(pixels.height)
        sequence = sample.sequence
        capture_time_ns = sample.captureTimeNs
        presentation_time_ns = sample.presentationTimeNs
        delivery_index = deliveryIndex
        flags = sample.isIndependent ? UInt32(CVHOST_FRAME_FLAG_INDEPENDENT) : 0
        color_range = pixels.colorimetry.range.rawValue
        color_matrix = pixels.format.isRGB ? CVHOST_COLOR_MATRIX_NONE.rawValue : pixels.colorimetry.matrix.rawValue
        plane_count = UInt32(min(pixels.planes.count, 4))
        source_width = UInt32(placement.sourceWidth)
        source_height = UInt32(placement.sourceHeight)
        content_x = UInt32(placement.content.x)
        content_y = UInt32(placement.content.y)
        content_width = UInt32(placement.content.width)
        content_height = UInt32(placement.content.height)
        withUnsafeMutableBytes(of: &planes) { raw in
            let planes = raw.bindMemory(to: cvhost_plane.self)
            for (i, p) in pixels.planes.prefix(4).enumerated() {
                planes[i] = cvhost_plane(data: p.base.assumingMemoryBound(to: UInt8.self), stride: UInt32(p.bytesPerRow),
                                         width: UInt32(p.samplesPerRow), height: UInt32(p.rows), fd: -1, offset: 0,
                                         length: UInt64(p.bytesPerRow * p.rows))
            }
        }
    }
}
