/// Pixel format conversions between the formats cvhost knows.
///
/// Colour maths is BT.601 with full-range luma (what JPEG and most webcams deliver, and what
/// detectors trained on RGB photos expect). Every pair is supported: direct routes for the
/// common cases, otherwise through I420.
enum PixelConverter {
    static func convert(_ source: PixelBuffer, to target: PixelFormat) -> PixelBuffer {
        switch (source.format, target) {
        case (_, .gray8): return toGray(source)
        case (.rgb24, .bgr24), (.bgr24, .rgb24): return swapRedBlue(source)
        case (_, .i420): return toI420(source)
        case (.i420, _): return fromI420(source, to: target)
        default: return fromI420(toI420(source), to: target)
        }
    }

    // MARK: - Luma

    private static func toGray(_ src: PixelBuffer) -> PixelBuffer {
        let w = src.width, h = src.height
        return PixelBuffer.allocate(format: .gray8, width: w, height: h) { dst, stride in
            let out = dst[0].assumingMemoryBound(to: UInt8.self)
            let p = src.planes[0]
            for y in 0..<h {
                let row = p.base.advanced(by: y * p.bytesPerRow).assumingMemoryBound(to: UInt8.self)
                let o = out + y * stride[0]
                switch src.format {
                case .gray8, .i420, .nv12:
                    o.update(from: row, count: w)
                case .yuyv:
                    for x in 0..<w { o[x] = row[x * 2] }
                case .rgb24, .bgr24:
                    let (ri, bi) = src.format == .rgb24 ? (0, 2) : (2, 0)
                    for x in 0..<w {
                        o[x] = luma(r: row[x * 3 + ri], g: row[x * 3 + 1], b: row[x * 3 + bi])
                    }
                }
            }
        }
    }

    @inline(__always)
    private static func luma(r: UInt8, g: UInt8, b: UInt8) -> UInt8 {
        UInt8(truncatingIfNeeded: (77 &* Int(r) &+ 150 &* Int(g) &+ 29 &* Int(b) &+ 128) >> 8)
    }

    // MARK: - To I420

    private static func toI420(_ src: PixelBuffer) -> PixelBuffer {
        let w = src.width, h = src.height
        let cw = (w + 1) / 2, ch = (h + 1) / 2
        return PixelBuffer.allocate(format: .i420, width: w, height: h) { dst, stride in
            let yp = dst[0].assumingMemoryBound(to: UInt8.self)
            let up = dst[1].assumingMemoryBound(to: UInt8.self)
            let vp = dst[2].assumingMemoryBound(to: UInt8.self)
            let p0 = src.planes[0]
            func row0(_ y: Int) -> UnsafePointer<UInt8> {
                p0.base.advanced(by: y * p0.bytesPerRow).assumingMemoryBound(to: UInt8.self)
            }
            switch src.format {
            case .i420:
                preconditionFailure("i420 to i420 is not a conversion")
            case .gray8:
                for y in 0..<h { (yp + y * stride[0]).update(from: row0(y), count: w) }
                for y in 0..<ch {
                    (up + y * stride[1]).update(repeating: 128, count: cw)
                    (vp + y * stride[2]).update(repeating: 128, count: cw)
                }
            case .nv12:
                for y in 0..<h { (yp + y * stride[0]).update(from: row0(y), count: w) }
                let p1 = src.planes[1]
                for y in 0..<ch {
                    let uv = p1.base.advanced(by: y * p1.bytesPerRow).assumingMemoryBound(to: UInt8.self)
                    let u = up + y * stride[1], v = vp + y * stride[2]
                    for x in 0..<cw {
                        u[x] = uv[x * 2]
                        v[x] = uv[x * 2 + 1]
                    }
                }
            case .yuyv:
                for y in 0..<h {
                    let r = row0(y), o = yp + y * stride[0]
                    for x in 0..<w { o[x] = r[x * 2] }
                    if y % 2 == 0 {
                        let u = up + (y / 2) * stride[1], v = vp + (y / 2) * stride[2]
                        for x in 0..<cw {
                            u[x] = r[x * 4 + 1]
                            v[x] = r[x * 4 + 3]
                        }
                    }
                }
            case .rgb24, .bgr24:
                let (ri, bi) = src.format == .rgb24 ? (0, 2) : (2, 0)
                for y in 0..<h {
                    let r = row0(y), o = yp + y * stride[0]
                    for x in 0..<w { o[x] = luma(r: r[x * 3 + ri], g: r[x * 3 + 1], b: r[x * 3 + bi]) }
                }
                // Chroma from the average of each 2x2 block.
                for cy in 0..<ch {
                    let ra = row0(cy * 2), rb = row0(min(cy * 2 + 1, h - 1))
                    let u = up + cy * stride[1], v = vp + cy * stride[2]
                    for cx in 0..<cw {
                        let x0 = cx * 2 * 3, x1 = min(cx * 2 + 1, w - 1) * 3
                        let rs = Int(ra[x0 + ri]) + Int(ra[x1 + ri]) + Int(rb[x0 + ri]) + Int(rb[x1 + ri])
                        let gs = Int(ra[x0 + 1]) + Int(ra[x1 + 1]) + Int(rb[x0 + 1]) + Int(rb[x1 + 1])
                        let bs = Int(ra[x0 + bi]) + Int(ra[x1 + bi]) + Int(rb[x0 + bi]) + Int(rb[x1 + bi])
                        // BT.601 full range, sums of 4 samples: divide by 4 * 256.
                        u[cx] = clamp(((-43 * rs - 85 * gs + 128 * bs) >> 10) + 128)
                        v[cx] = clamp(((128 * rs - 107 * gs - 21 * bs) >> 10) + 128)
                    }
                }
            }
        }
    }

    // MARK: - From I420

    private static func fromI420(_ src: PixelBuffer, to target: PixelFormat) -> PixelBuffer {
        let w = src.width, h = src.height
        let cw = (w + 1) / 2, ch = (h + 1) / 2
        let py = src.planes[0], pu = src.planes[1], pv = src.planes[2]
        func row(_ p: PixelBuffer.Plane, _ y: Int) -> UnsafePointer<UInt8> {
            p.base.advanced(by: y * p.bytesPerRow).assumingMemoryBound(to: UInt8.self)
        }
        return PixelBuffer.allocate(format: target, width: w, height: h) { dst, stride in
            let out0 = dst[0].assumingMemoryBound(to: UInt8.self)
            switch target {
            case .nv12:
                for y in 0..<h { (out0 + y * stride[0]).update(from: row(py, y), count: w) }
                let uv = dst[1].assumingMemoryBound(to: UInt8.self)
                for y in 0..<ch {
                    let u = row(pu, y), v = row(pv, y), o = uv + y * stride[1]
                    for x in 0..<cw {
                        o[x * 2] = u[x]
                        o[x * 2 + 1] = v[x]
                    }
                }
            case .yuyv:
                for y in 0..<h {
                    let yr = row(py, y), u = row(pu, y / 2), v = row(pv, y / 2), o = out0 + y * stride[0]
                    for x in 0..<cw {
                        o[x * 4] = yr[x * 2]
                        o[x * 4 + 1] = u[x]
                        o[x * 4 + 2] = x * 2 + 1 < w ? yr[x * 2 + 1] : yr[x * 2]
                        o[x * 4 + 3] = v[x]
                    }
                }
            case .rgb24, .bgr24:
                let (ri, bi) = target == .rgb24 ? (0, 2) : (2, 0)
                for y in 0..<h {
                    let yr = row(py, y), u = row(pu, y / 2), v = row(pv, y / 2), o = out0 + y * stride[0]
                    for x in 0..<w {
                        let c = Int(yr[x]), d = Int(u[x / 2]) - 128, e = Int(v[x / 2]) - 128
                        // BT.601 full range, fixed point with 8 fractional bits.
                        o[x * 3 + ri] = clamp(c + ((359 * e + 128) >> 8))
                        o[x * 3 + 1] = clamp(c - ((88 * d + 183 * e - 128) >> 8))
                        o[x * 3 + bi] = clamp(c + ((454 * d + 128) >> 8))
                    }
                }
            case .gray8, .i420:
                preconditionFailure("handled before")
            }
        }
    }

    // MARK: - RGB <-> BGR

    private static func swapRedBlue(_ src: PixelBuffer) -> PixelBuffer {
        let target: PixelFormat = src.format == .rgb24 ? .bgr24 : .rgb24
        let p = src.planes[0]
        return PixelBuffer.allocate(format: target, width: src.width, height: src.height) { dst, stride in
            for y in 0..<src.height {
                let r = p.base.advanced(by: y * p.bytesPerRow).assumingMemoryBound(to: UInt8.self)
                let o = dst[0].assumingMemoryBound(to: UInt8.self) + y * stride[0]
                for x in 0..<src.width {
                    o[x * 3] = r[x * 3 + 2]
                    o[x * 3 + 1] = r[x * 3 + 1]
                    o[x * 3 + 2] = r[x * 3]
                }
            }
        }
    }

    @inline(__always)
    private static func clamp(_ v: Int) -> UInt8 { UInt8(truncatingIfNeeded: v < 0 ? 0 : (v > 255 ? 255 : v)) }
}
