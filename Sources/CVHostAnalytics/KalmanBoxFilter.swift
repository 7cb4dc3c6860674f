/// A box's motion: a Kalman filter over its centre, aspect ratio and height and their velocities,
/// with constant velocity between frames (SORT's and ByteTrack's model, with their noise: the
/// position's 1/20 and the velocity's 1/160 of the box's height). Time is in seconds, the
/// velocities per thirtieth of one, so that a frame rate of 30 (the trackers' usual) is one step;
/// a frame that comes later, or a frame rate of 5, is a longer step with more noise.
struct KalmanBoxFilter: Sendable {
    /// cx, cy, aspect (width / height), height, then their velocities.
    private(set) var mean: [Double]
    /// 8 x 8, row-major.
    private var covariance: [Double]

    private static let positionWeight = 1.0 / 20, velocityWeight = 1.0 / 160
    /// Steps a second at which the noise above is the trackers' own.
    private static let stepsPerSecond = 30.0

    init(_ box: Box) {
        let m = Self.measurement(box)
        mean = m + [0, 0, 0, 0]
        let h = m[3], p = Self.positionWeight, v = Self.velocityWeight
        let std = [2 * p * h, 2 * p * h, 1e-2, 2 * p * h, 10 * v * h, 10 * v * h, 1e-5, 10 * v * h]
        covariance = Self.diagonal(std.map { $0 * $0 })
    }

    /// The box the state stands for.
    var box: Box {
        let h = max(mean[3], 1e-6), w = max(mean[2], 1e-6) * h
        return Box(x: mean[0] - w / 2, y: mean[1] - h / 2, width: w, height: h)
    }

    static func measurement(_ b: Box) -> [Double] {
        [b.x + b.width / 2, b.y + b.height / 2, b.width / max(b.height, 1e-6), b.height]
    }

    /// Moves the state `seconds` on. `still`: the height stops changing (a track that is not seen).
    mutating func predict(seconds: Double, still: Bool = false) {
        let k = max(0, seconds) * Self.stepsPerSecond
        if still { mean[7] = 0 }
        let h = mean[3], p = Self.positionWeight, v = Self.velocityWeight
        for i in 0..<4 { mean[i] += k * mean[i + 4] }
        // P = F P F' + Q, F = [I kI; 0 I].
        var f = Self.diagonal(Array(repeating: 1, count: 8))
        for i in 0..<4 { f[i * 8 + i + 4] = k }
        covariance = Self.multiply(Self.multiply(f, covariance, 8, 8, 8), Self.transpose(f, 8, 8), 8, 8, 8)
        let std = [p * h, p * h, 1e-2, p * h, v * h, v * h, 1e-5, v * h]
        for i in 0..<8 { covariance[i * 8 + i] += std[i] * std[i] * max(k, 1e-3) }
    }

    /// Corrects the state with a box seen now.
    mutating func update(_ box: Box) {
        let z = Self.measurement(box)
        let h = mean[3], p = Self.positionWeight
        let r = [p * h, p * h, 1e-1, p * h].map { $0 * $0 }
        // S = H P H' + R: the top-left 4 x 4 of P, plus R.
        var s = [Double](repeating: 0, count: 16)
        for i in 0..<4 { for j in 0..<4 { s[i * 4 + j] = covariance[i * 8 + j] } }
        for i in 0..<4 { s[i * 4 + i] += r[i] }
        guard let sInverse = Self.inverse4(s) else { return }
        // K = P H' S^-1: P's first 4 columns times S^-1 (8 x 4).
        var ph = [Double](repeating: 0, count: 32)
        for i in 0..<8 { for j in 0..<4 { ph[i * 4 + j] = covariance[i * 8 + j] } }
        let gain = Self.multiply(ph, sInverse, 8, 4, 4)
        let innovation = (0..<4).map { z[$0] - mean[$0] }
        for i in 0..<8 { for j in 0..<4 { mean[i] += gain[i * 4 + j] * innovation[j] } }
        // P = P - K S K'.
        let kskt = Self.multiply(Self.multiply(gain, s, 8, 4, 4), Self.transpose(gain, 8, 4), 8, 4, 8)
        for i in 0..<64 { covariance[i] -= kskt[i] }
    }

    // MARK: - Small matrices (row-major)

    private static func diagonal(_ d: [Double]) -> [Double] {
        var m = [Double](repeating: 0, count: d.count * d.count)
        for i in d.indices { m[i * d.count + i] = d[i] }
        return m
    }

    /// (n x k) times (k x m).
    private static func multiply(_ a: [Double], _ b: [Double], _ n: Int, _ k: Int, _ m: Int) -> [Double] {
        var c = [Double](repeating: 0, count: n * m)
        for i in 0..<n {
            for t in 0..<k where a[i * k + t] != 0 {
                let x = a[i * k + t]
                for j in 0..<m { c[i * m + j] += x * b[t * m + j] }
            }
        }
        return c
    }

    private static func transpose(_ a: [Double], _ n: Int, _ m: Int) -> [Double] {
        var t = [Double](repeating: 0, count: n * m)
        for i in 0..<n { for j in 0..<m { t[j * n + i] = a[i * m + j] } }
        return t
    }

    /// The inverse of a 4 x 4 matrix by Gauss-Jordan with pivoting; nil when singular.
    private static func inverse4(_ m: [Double]) -> [Double]? {
        var a = m, inv = diagonal([1, 1, 1, 1])
        for col in 0..<4 {
            let pivot = (col..<4).max { abs(a[$0 * 4 + col]) < abs(a[$1 * 4 + col]) }!
            guard abs(a[pivot * 4 + col]) > 1e-12 else { return nil }
            if pivot != col {
                for j in 0..<4 {
                    a.swapAt(col * 4 + j, pivot * 4 + j)
                    inv.swapAt(col * 4 + j, pivot * 4 + j)
                }
            }
            let d = a[col * 4 + col]
            for j in 0..<4 {
                a[col * 4 + j] /= d
                inv[col * 4 + j] /= d
            }
            for r in 0..<4 where r != col {
                let f = a[r * 4 + col]
                guard f != 0 else { continue }
                for j in 0..<4 {
                    a[r * 4 + j] -= f * a[col * 4 + j]
                    inv[r * 4 + j] -= f * inv[col * 4 + j]
                }
            }
        }
        return inv
    }
}
