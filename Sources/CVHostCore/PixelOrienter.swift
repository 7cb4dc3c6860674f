/// Mirrors and rotates pixel buffers by quarter turns, keeping their pixel format: each plane
/// is copied element by element (a pixel, or a chroma pair in NV12), so nothing is resampled.
enum PixelOrienter {
    /// YUYV packs two pixels with one chroma pair: it can be mirrored and turned upside down,
    /// but a quarter turn would need the pairs split; such frames are turned in I420 instead.
    static func canOrient(_ format: PixelFormat, _ orientation: VideoOrientation) -> Bool {
        format != .yuyv || !orientation.swapsSides
    }

    static func orient(_ src: PixelBuffer, _ o: VideoOrientation) -> PixelBuffer {
        precondition(canOrient(src.format, o))
        let width = o.swapsSides ? src.height : src.width
        let height = o.swapsSides ? src.width : src.height
        let layout = src.format.planeLayout(width: src.width, height: src.height)
        return PixelBuffer.allocate(format: src.format, width: width, height: height, colorimetry: src.colorimetry) { planes, strides in
            for (i, plane) in src.planes.enumerated() {
                let element = elementSize(src.format, plane: i)
                let columns = layout[i].rowBytes / element
                turn(plane, columns: columns, rows: layout[i].rows, element: element, o, into: planes[i], stride: strides[i])
                // Reversed YUYV pairs keep their chroma but list their two lumas the wrong way round.
                if src.format == .yuyv && o.isMirrored != (o.rotationAngle == 180) {
                    swapPairedLumas(planes[i], stride: strides[i], pairs: columns, rows: layout[i].rows)
                }
            }
        }
    }

    /// Bytes of one element of a plane: what moves as a whole.
    static func elementSize(_ format: PixelFormat, plane: Int) -> Int {
        switch format {
        case .gray8, .i420: 1
        case .nv12: plane == 0 ? 1 : 2  // UV pairs stay together
        case .yuyv: 4  // Y0 U Y1 V
        case .rgb24, .bgr24: 3
        }
    }

    /// Copies a plane of columns x rows elements into `dst`, turned. For each destination row the
    /// source is walked from a start element by a fixed step, along a source row or down a column:
    ///   0°: S(m(x), y)   90°: S(m(y), rows-1-x)   180°: S(m(columns-1-x), rows-1-y)   270°: S(m(columns-1-y), x)
    /// where m mirrors a column index when the orientation is mirrored.
    private static func turn(_ src: PixelBuffer.Plane, columns: Int, rows: Int, element: Int, _ o: VideoOrientation,
                             into dst: UnsafeMutableRawPointer, stride: Int) {
        let outRows = o.swapsSides ? columns : rows
        let outColumns = o.swapsSides ? rows : columns
        func m(_ column: Int) -> Int { o.isMirrored ? columns - 1 - column : column }
        let mirrorStep = o.isMirrored ? -element : element
        for y in 0..<outRows {
            let (sx, sy, step): (Int, Int, Int) = switch o.rotationAngle {
            case 90: (m(y), rows - 1, -src.bytesPerRow)
            case 180: (m(columns - 1), rows - 1 - y, -mirrorStep)
            case 270: (m(columns - 1 - y), 0, src.bytesPerRow)
            default: (m(0), y, mirrorStep)
            }
            let from = src.base + sy * src.bytesPerRow + sx * element
            let to = dst + y * stride
            switch element {
            case 1: copy(UInt8.self, from, step, to, outColumns)
            case 2: copy(UInt16.self, from, step, to, outColumns)
            case 4: copy(UInt32.self, from, step, to, outColumns)
            default:
                for x in 0..<outColumns { (to + x * element).copyMemory(from: from + x * step, byteCount: element) }
            }
        }
    }

    @inline(__always)
    private static func copy<T>(_: T.Type, _ from: UnsafeRawPointer, _ step: Int, _ to: UnsafeMutableRawPointer, _ count: Int) {
        let out = to.assumingMemoryBound(to: T.self)
        var p = from
        for x in 0..<count {
            out[x] = p.loadUnaligned(as: T.self)
            p += step
        }
    }

    private static func swapPairedLumas(_ plane: UnsafeMutableRawPointer, stride: Int, pairs: Int, rows: Int) {
        for y in 0..<rows {
            let row = (plane + y * stride).assumingMemoryBound(to: UInt8.self)
            for pair in 0..<pairs { swap(&row[pair * 4], &row[pair * 4 + 2]) }
        }
    }
}
