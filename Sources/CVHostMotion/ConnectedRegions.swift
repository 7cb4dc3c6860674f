/// The regions of set pixels of a binary picture (8-connected: pixels touching at a corner are
/// one region), each with its box and its pixel count: what OpenCV's contours give a motion
/// detector, found in two passes over the rows with a union-find of labels (no contour tracing).
struct ConnectedRegions {
    struct Region: Equatable {
        var minX: Int, minY: Int, maxX: Int, maxY: Int
        var area: Int
    }

    /// Each pixel's label (kept between calls: no allocation a frame).
    private var labels: [Int32] = []
    /// The label each joins (union-find); label 0 is "not set".
    private var parent: [Int32] = []

    /// The regions of `mask` (`width` x `height`, row by row, nonzero set).
    mutating func find(_ mask: [UInt8], width: Int, height: Int) -> [Region] {
        if labels.count != width * height { labels = [Int32](repeating: 0, count: width * height) }
        var l = labels, p = parent
        labels = []
        parent = []
        defer {
            labels = l
            parent = p
        }
        p.removeAll(keepingCapacity: true)
        p.append(0)
        func root(_ label: Int32) -> Int32 {
            var x = label
            while p[Int(x)] != x {
                p[Int(x)] = p[Int(p[Int(x)])]  // halving: later finds are shorter
                x = p[Int(x)]
            }
            return x
        }
        for y in 0..<height {
            let row = y * width
            for x in 0..<width {
                guard mask[row + x] != 0 else {
                    l[row + x] = 0
                    continue
                }
                // The neighbours already labelled: left, and the three above; all joined as one.
                var label: Int32 = 0
                func meet(_ other: Int32) {
                    guard other != 0 else { return }
                    let r = root(other)
                    if label == 0 {
                        label = r
                    } else if r != label {
                        let (keep, join) = r < label ? (r, label) : (label, r)
                        p[Int(join)] = keep
                        label = keep
                    }
                }
                if x > 0 { meet(l[row + x - 1]) }
                if y > 0 {
                    let up = row - width
                    if x > 0 { meet(l[up + x - 1]) }
                    meet(l[up + x])
                    if x + 1 < width { meet(l[up + x + 1]) }
                }
                if label == 0 {
                    label = Int32(p.count)
                    p.append(label)
                }
                l[row + x] = label
            }
        }
        // Second pass: each pixel counted in its root's region.
        var index = [Int32](repeating: -1, count: p.count)
        var regions: [Region] = []
        for y in 0..<height {
            for x in 0..<width {
                let label = l[y * width + x]
                guard label != 0 else { continue }
                let r = Int(root(label))
                if index[r] < 0 {
                    index[r] = Int32(regions.count)
                    regions.append(Region(minX: x, minY: y, maxX: x, maxY: y, area: 0))
                }
                let i = Int(index[r])
                regions[i].minX = min(regions[i].minX, x)
                regions[i].maxX = max(regions[i].maxX, x)
                regions[i].minY = min(regions[i].minY, y)
                regions[i].maxY = max(regions[i].maxY, y)
                regions[i].area += 1
            }
        }
        return regions
    }
}
