import CV4L2Shim
import CVHostCore

/// Which of V4L2's two buffer APIs a capture node speaks: single-planar (one memory buffer a
/// frame; USB cameras) or multi-planar (a buffer per plane; many SoC capture drivers expose only
/// this). Every format, buffer and stream call names it.
struct V4L2BufferType: Equatable, Sendable {
    let rawValue: UInt32
    var isMultiPlanar: Bool { rawValue == V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE.rawValue }

    static let single = V4L2BufferType(rawValue: V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
    static let multiPlanar = V4L2BufferType(rawValue: V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE.rawValue)

    /// The single-planar API when the node has it (simpler, and the one libv4lconvert knows), else multi-planar.
    init(deviceCaps: UInt32) {
        rawValue = deviceCaps & UInt32(V4L2_CAP_VIDEO_CAPTURE) != 0 ? V4L2BufferType.single.rawValue
            : V4L2BufferType.multiPlanar.rawValue
    }

    private init(rawValue: UInt32) { self.rawValue = rawValue }
}

/// A frame's layout as the driver reports it (G_FMT/S_FMT): the size, the four-character code,
/// and for each memory plane its bytes per line and size. Frames are read by this, never by
/// what the format would need unpadded.
struct V4L2Layout: Equatable, Sendable {
    struct MemoryPlane: Equatable, Sendable {
        let bytesPerLine: Int
        let sizeImage: Int
    }

    /// Where one image plane lies: in which memory plane, from which offset, at which stride;
    /// `needed`: the bytes of that memory plane a frame must fill for this plane to be whole.
    struct ImagePlane: Equatable, Sendable {
        let memoryPlane: Int
        let offset: Int
        let bytesPerRow: Int
        let rows: Int
        let samplesPerRow: Int
        let needed: Int
    }

    let fourcc: UInt32
    let width: Int
    let height: Int
    let memoryPlanes: [MemoryPlane]
    /// The range and matrix of its YUV samples, as the driver states them (its defaults mapped
    /// as V4L2 defines them); an MJPEG frame's own come from the JPEG.
    let colorimetry: Colorimetry

    /// The pixel format cvhost hands plugins (for MJPEG: after decoding); nil when it has none.
    var pixelFormat: PixelFormat? { V4L2FormatEnumeration.pixelFormat(for: fourcc) }

    /// Frames are JPEGs (MJPEG), decoded by cvhost: no planes to lay out.
    var isJPEG: Bool { fourcc == CV4L2Shim_PIX_FMT_MJPEG || fourcc == CV4L2Shim_PIX_FMT_JPEG }

    /// Reads a G_FMT/S_FMT answer of either API.
    init(_ f: v4l2_format, type: V4L2BufferType) {
        if type.isMultiPlanar {
            let mp = f.fmt.pix_mp
            fourcc = mp.pixelformat
            width = Int(mp.width)
            height = Int(mp.height)
            colorimetry = V4L2Layout.colorimetry(colorspace: mp.colorspace, ycbcrEncoding: UInt32(mp.ycbcr_enc),
                                                 quantization: UInt32(mp.quantization))
            memoryPlanes = withUnsafeBytes(of: mp.plane_fmt) { raw in
                let planes = raw.bindMemory(to: v4l2_plane_pix_format.self)
                return (0..<min(Int(mp.num_planes), planes.count)).map {
                    MemoryPlane(bytesPerLine: Int(planes[$0].bytesperline), sizeImage: Int(planes[$0].sizeimage))
                }
            }
        } else {
            fourcc = f.fmt.pix.pixelformat
            width = Int(f.fmt.pix.width)
            height = Int(f.fmt.pix.height)
            colorimetry = V4L2Layout.colorimetry(colorspace: f.fmt.pix.colorspace, ycbcrEncoding: f.fmt.pix.ycbcr_enc,
                                                 quantization: f.fmt.pix.quantization)
            memoryPlanes = [MemoryPlane(bytesPerLine: Int(f.fmt.pix.bytesperline), sizeImage: Int(f.fmt.pix.sizeimage))]
        }
    }

    init(fourcc: UInt32, width: Int, height: Int, memoryPlanes: [MemoryPlane],
         colorimetry: Colorimetry = Colorimetry(range: .limited, matrix: .bt601)) {
        self.fourcc = fourcc
        self.width = width
        self.height = height
        self.memoryPlanes = memoryPlanes
        self.colorimetry = colorimetry
    }

    /// V4L2's colorspace, Y'CbCr encoding and quantization as a colorimetry, their defaults mapped
    /// as videodev2.h's V4L2_MAP_YCBCR_ENC_DEFAULT and V4L2_MAP_QUANTIZATION_DEFAULT do (Y'CbCr is
    /// limited range except in the JPEG colorspace).
    static func colorimetry(colorspace: UInt32, ycbcrEncoding: UInt32, quantization: UInt32) -> Colorimetry {
        var encoding = ycbcrEncoding
        if encoding == V4L2_YCBCR_ENC_DEFAULT.rawValue {
            encoding = switch colorspace {
            case V4L2_COLORSPACE_REC709.rawValue, V4L2_COLORSPACE_DCI_P3.rawValue: V4L2_YCBCR_ENC_709.rawValue
            case V4L2_COLORSPACE_BT2020.rawValue: V4L2_YCBCR_ENC_BT2020.rawValue
            default: V4L2_YCBCR_ENC_601.rawValue
            }
        }
        let matrix: Colorimetry.Matrix = switch encoding {
        case V4L2_YCBCR_ENC_709.rawValue, V4L2_YCBCR_ENC_XV709.rawValue, V4L2_YCBCR_ENC_SMPTE240M.rawValue: .bt709
        case V4L2_YCBCR_ENC_BT2020.rawValue, V4L2_YCBCR_ENC_BT2020_CONST_LUM.rawValue: .bt2020
        default: .bt601
        }
        let range: Colorimetry.Range = switch quantization {
        case V4L2_QUANTIZATION_FULL_RANGE.rawValue: .full
        case V4L2_QUANTIZATION_LIM_RANGE.rawValue: .limited
        default: colorspace == V4L2_COLORSPACE_JPEG.rawValue ? .full : .limited
        }
        return Colorimetry(range: range, matrix: matrix)
    }

    /// Where each image plane of `format` lies: in which memory plane, at which offset, with which
    /// stride, and how many bytes of that memory plane the frame must fill.
    /// - With a memory plane per image plane (NV12M, YUV420M), each has its own bytes per line.
    /// - With one memory plane holding several image planes (NV12, YU12), the planes follow each
    ///   other and the chroma planes' lines are the luma's bytes per line (NV12) or half of it
    ///   (YU12), as the V4L2 specification defines those formats.
    /// - Returns: nil when the memory planes cannot hold the format (a driver answer cvhost cannot read).
    func imagePlanes(_ format: PixelFormat) -> [ImagePlane]? {
        let geometry = format.planeLayout(width: width, height: height)
        var out: [ImagePlane] = []
        if memoryPlanes.count == geometry.count {
            for (i, g) in geometry.enumerated() {
                let stride = max(memoryPlanes[i].bytesPerLine, g.rowBytes)
                out.append(ImagePlane(memoryPlane: i, offset: 0, bytesPerRow: stride, rows: g.rows, samplesPerRow: g.samplesPerRow,
                                      needed: stride * (g.rows - 1) + g.rowBytes))
            }
        } else if memoryPlanes.count == 1 {
            let lumaStride = max(memoryPlanes[0].bytesPerLine, geometry[0].rowBytes)
            var offset = 0
            for (i, g) in geometry.enumerated() {
                let stride = i == 0 || format == .nv12 ? lumaStride : lumaStride / 2
                guard stride >= g.rowBytes else { return nil }
                out.append(ImagePlane(memoryPlane: 0, offset: offset, bytesPerRow: stride, rows: g.rows, samplesPerRow: g.samplesPerRow,
                                      needed: offset + stride * (g.rows - 1) + g.rowBytes))
                offset += stride * g.rows
            }
        } else {
            return nil
        }
        // A size image of 0 means the driver did not say (allowed for some formats).
        let fits = out.allSatisfy { memoryPlanes[$0.memoryPlane].sizeImage == 0 || $0.needed <= memoryPlanes[$0.memoryPlane].sizeImage }
        return fits ? out : nil
    }
}
