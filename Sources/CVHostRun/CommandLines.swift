/// Commands as lines of bytes: each line that is not blank is a command; a line longer than
/// `maxLine` is refused as a whole (a command is a few dozen bytes), so that no stream of bytes
/// without a newline can grow cvhost's memory.
package struct CommandLines {
    package static let maxLine = 64 * 1024

    package enum Line {
        case command([UInt8])
        case tooLong
    }

    private var pending: [UInt8] = []
    private var skipping = false

    package init() {}

    /// Takes the next bytes read; `each` is told of every line they end.
    package mutating func feed(_ bytes: some Sequence<UInt8>, _ each: (Line) -> Void) {
        for byte in bytes {
            if byte != UInt8(ascii: "\n") {
                if pending.count < Self.maxLine { pending.append(byte) } else { skipping = true }
                continue
            }
            defer {
                pending.removeAll(keepingCapacity: true)
                skipping = false
            }
            if skipping {
                each(.tooLong)
            } else if !pending.allSatisfy({ $0 == 32 || $0 == 9 || $0 == 13 }) {
                each(.command(pending))
            }
        }
    }
}
