/// The linear assignment problem: which row goes with which column so that the sum of costs is
/// least (the Hungarian method, with potentials: O(n³)), as ByteTrack solves it with lap.lapjv.
/// Pairs that cost more than `limit` are not made.
enum Assignment {
    /// - Parameters:
    ///   - cost: rows x columns, row-major.
    /// - Returns: the pairs (row, column) made, each row and column at most once.
    static func solve(_ cost: [Double], rows: Int, columns: Int, limit: Double) -> [(row: Int, column: Int)] {
        guard rows > 0, columns > 0 else { return [] }
        // Square, padded with a cost above the limit: a padded pair is no pair.
        let n = max(rows, columns), big = limit + 1
        func c(_ i: Int, _ j: Int) -> Double { i < rows && j < columns ? min(cost[i * columns + j], big) : big }
        // e-maxx's Hungarian: 1-based, u and v the potentials, p[j] the row of column j, way the path.
        var u = [Double](repeating: 0, count: n + 1), v = u
        var p = [Int](repeating: 0, count: n + 1), way = p
        for i in 1...n {
            p[0] = i
            var j0 = 0
            var minv = [Double](repeating: .infinity, count: n + 1)
            var used = [Bool](repeating: false, count: n + 1)
            repeat {
                used[j0] = true
                let i0 = p[j0]
                var delta = Double.infinity, j1 = 0
                for j in 1...n where !used[j] {
                    let cur = c(i0 - 1, j - 1) - u[i0] - v[j]
                    if cur < minv[j] {
                        minv[j] = cur
                        way[j] = j0
                    }
                    if minv[j] < delta {
                        delta = minv[j]
                        j1 = j
                    }
                }
                for j in 0...n {
                    if used[j] {
                        u[p[j]] += delta
                        v[j] -= delta
                    } else {
                        minv[j] -= delta
                    }
                }
                j0 = j1
            } while p[j0] != 0
            repeat {
                let j1 = way[j0]
                p[j0] = p[j1]
                j0 = j1
            } while j0 != 0
        }
        var pairs: [(row: Int, column: Int)] = []
        for j in 1...n {
            let i = p[j] - 1, col = j - 1
            if i < rows, col < columns, cost[i * columns + col] <= limit { pairs.append((i, col)) }
        }
        return pairs.sorted { $0.row < $1.row }
    }
}
