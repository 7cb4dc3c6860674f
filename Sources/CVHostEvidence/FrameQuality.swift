import CVHostCore

/// How good a picture of a box is, to keep each track's best frame for its snapshot when it ends:
/// the detector's score times the box's area (a near, clear view), times how sharp the box is (a
/// face turning or a car passing blurs), as a factor that nears 1 for a sharp box.
enum FrameQuality {
    /// The mean absolute Laplacian of the box's luma, every second pixel: 0 for a flat or blurred
    /// box, tens for a sharp one. `pixels` in I420 (its first plane is luma).
    static func sharpness(_ pixels: PixelBuffer, box: JPEGEncoder.Region) -> Double {
        guard let luma = pixels.planes.first else { return 0 }
        let x0 = max(1, box.x), y0 = max(1, box.y)
        let x1 = min(pixels.width - 1, box.x.addingClamped(box.width)), y1 = min(pixels.height - 1, box.y.addingClamped(box.height))
        guard x1 - x0 >= 4, y1 - y0 >= 4 else { return 0 }
        let p = luma.base.assumingMemoryBound(to: UInt8.self), stride = luma.bytesPerRow
        var sum = 0, n = 0
        for y in Swift.stride(from: y0, to: y1, by: 2) {
            let row = p + y * stride
            for x in Swift.stride(from: x0, to: x1, by: 2) {
                let laplacian = 4 * Int(row[x]) - Int(row[x - 1]) - Int(row[x + 1]) - Int(row[x - stride]) - Int(row[x + stride])
                sum += abs(laplacian)
                n += 1
            }
        }
        return n > 0 ? Double(sum) / Double(n) : 0
    }

    /// Score x area x a sharpness factor (half at `halfSharp`).
    static func quality(score: Double, area: Double, sharpness: Double) -> Double {
        score * area * sharpness / (sharpness + halfSharp)
    }

    static let halfSharp = 4.0
}
