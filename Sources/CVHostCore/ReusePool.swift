/// Things costly to make (a swscale context, scratch memory), kept for reuse by what they were made
/// for: a thread takes one, uses it alone, and gives it back. A few are kept per key: enough for
/// a few plugins converting at once; more are made when more are taken, and dropped when given.
final class ReusePool<Key: Hashable, Item>: @unchecked Sendable {
    // @unchecked Sendable: the idle items are reached only through `idle`'s lock, and an item is
    // used by one thread at a time (taken out of the pool).
    private let idle = Locked<[Key: [Item]]>([:])
    private let keptPerKey: Int
    private let make: (Key) -> Item

    init(keptPerKey: Int = 4, make: @escaping (Key) -> Item) {
        self.keptPerKey = keptPerKey
        self.make = make
    }

    /// Runs `body` with an item for `key`: an idle one, or a new one.
    func with<Result>(_ key: Key, _ body: (Item) throws -> Result) rethrows -> Result {
        let item = idle.withLock { $0[key]?.popLast() } ?? make(key)
        defer {
            idle.withLock { idle in
                if idle[key, default: []].count < keptPerKey { idle[key, default: []].append(item) }
            }
        }
        return try body(item)
    }
}
