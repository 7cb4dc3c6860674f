import CFFmpeg

extension PixelBuffer {
    /// Copies this I420 buffer's three planes into `frame`, a writable YUV420P frame of the same
    /// size (for an FFmpeg encoder or filter graph, which want frames of their own).
    public func copyI420(into frame: UnsafeMutablePointer<AVFrame>) {
        let destinations = [frame.pointee.data.0, frame.pointee.data.1, frame.pointee.data.2]
        let strides = [frame.pointee.linesize.0, frame.pointee.linesize.1, frame.pointee.linesize.2]
        for (i, plane) in planes.prefix(3).enumerated() {
            guard let dst = destinations[i] else { continue }
            let rows = i == 0 ? height : (height + 1) / 2
            let bytes = i == 0 ? width : (width + 1) / 2
            for y in 0..<rows {
                (dst + y * Int(strides[i])).update(from: plane.base.assumingMemoryBound(to: UInt8.self) + y * plane.bytesPerRow, count: bytes)
            }
        }
    }
}
