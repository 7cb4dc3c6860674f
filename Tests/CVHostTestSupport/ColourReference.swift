import Foundation

/// The exact (floating point) RGB of raw YUV, as FFmpeg writes raw frames: what cvhost's YUV to RGB
/// is measured against. Chroma is interpolated bilinearly with each sample sited at the centre of
/// the luma pixels it covers (edges repeated), then the ITU-R matrix applied and the result clamped.
public enum ColourReference {
    public enum Layout: Sendable { case i420, nv12, yuyv }

    public struct Difference: CustomStringConvertible {
        public let max: Int
        public let mean: Double
        public var description: String { "max \(max), mean \(String(format: "%.3f", mean))" }
    }

    /// R, G, B of each pixel, row by row. `kr`, `kb`: the matrix's luma weights (BT.709: 0.2126, 0.0722).
    public static func rgb(_ raw: Data, _ layout: Layout, width w: Int, height h: Int, limited: Bool, kr: Double, kb: Double) -> [Double] {
        let bytes = [UInt8](raw)
        let cw = (w + 1) / 2, ch = layout == .yuyv ? h : (h + 1) / 2
        func luma(_ x: Int, _ y: Int) -> Double {
            Double(layout == .yuyv ? bytes[y * cw * 4 + 2 * x] : bytes[y * w + x])
        }
        func sample(_ plane: Int, _ cx: Int, _ cy: Int) -> Double {
            switch layout {
            case .i420: Double(bytes[w * h + plane * cw * ch + cy * cw + cx])
            case .nv12: Double(bytes[w * h + cy * 2 * cw + 2 * cx + plane])
            case .yuyv: Double(bytes[cy * cw * 4 + 4 * cx + 1 + 2 * plane])
            }
        }
        func chroma(_ plane: Int, _ x: Int, _ y: Int) -> Double {
            let fx = min(max((Double(x) + 0.5) / 2 - 0.5, 0), Double(cw - 1))
            let fy = layout == .yuyv ? Double(y) : min(max((Double(y) + 0.5) / 2 - 0.5, 0), Double(ch - 1))
            let x0 = Int(fx), y0 = Int(fy), x1 = min(x0 + 1, cw - 1), y1 = min(y0 + 1, ch - 1)
            let ax = fx - Double(x0), ay = fy - Double(y0)
            let top = sample(plane, x0, y0) * (1 - ax) + sample(plane, x1, y0) * ax
            let bottom = sample(plane, x0, y1) * (1 - ax) + sample(plane, x1, y1) * ax
            return top * (1 - ay) + bottom * ay - 128
        }
        let kg = 1 - kr - kb
        let (yGain, cGain, yOffset) = limited ? (255.0 / 219, 255.0 / 224, 16.0) : (1, 1, 0)
        var out: [Double] = []
        out.reserveCapacity(w * h * 3)
        for y in 0..<h {
            for x in 0..<w {
                let l = (luma(x, y) - yOffset) * yGain, u = chroma(0, x, y) * cGain, v = chroma(1, x, y) * cGain
                let r = l + 2 * (1 - kr) * v, b = l + 2 * (1 - kb) * u
                out += [r, (l - kr * r - kb * b) / kg, b].map { min(max($0, 0), 255) }
            }
        }
        return out
    }

    /// How far packed RGB24 (BGR24 when `bgr`) is from the reference, in levels.
    public static func difference(_ mine: Data, _ reference: [Double], bgr: Bool = false) -> Difference {
        let bytes = [UInt8](mine)
        guard bytes.count == reference.count else { return Difference(max: 256, mean: 256) }
        var worst = 0, sum = 0
        for i in 0..<bytes.count {
            let ref = reference[bgr ? (i / 3 * 3 + 2 - i % 3) : i]
            let d = abs(Int(bytes[i]) - Int(ref.rounded()))
            worst = max(worst, d)
            sum += d
        }
        return Difference(max: worst, mean: Double(sum) / Double(max(1, bytes.count)))
    }
}
