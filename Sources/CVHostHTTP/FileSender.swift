import CVHostCore
import NIOCore
import NIOHTTP1

/// Sends a file's bytes (a clip, a snapshot) to one client without holding them: the kernel copies
/// them from the page cache to the socket (sendfile, NIO's FileRegion), a slice at a time, the
/// next once the last is taken. A reader that takes nothing for `stallLimit` seconds is closed. So a slow
/// reader costs a descriptor, not memory: 60 readers of a 20 MB clip held 8 MB each before
/// (480 MB), now none, and at most `ConnectionLimits.maxFileAnswers` answers are in flight at once.
enum FileSender {
    /// Bytes handed to the socket in one go: the stall watchdog's step.
    static let slice = 1 << 20

    /// Writes the head, then `count` bytes of `file` from `first`, then the end; closes the file
    /// when done or failed, and calls `finished` once then (on the channel's event loop).
    static func send(_ file: ServedFile, first: UInt64, count: UInt64, head: HTTPResponseHead, keepAlive: Bool, stallLimit: Double,
                     on channel: Channel, statistics: HTTPServerStatistics, finished: @escaping @Sendable () -> Void) {
        channel.eventLoop.execute {
            let handle = NIOFileHandle(_deprecatedTakingOwnershipOfDescriptor: file.descriptor)
            let state = Sending(handle: handle, channel: channel, end: Int(first + count), keepAlive: keepAlive,
                                stallLimit: .nanoseconds(Int64(stallLimit * 1e9)), statistics: statistics, finished: finished)
            channel.write(HTTPServerResponsePart.head(head), promise: nil)
            state.next(from: Int(first))
        }
    }

    /// One answer being sent; touched on the channel's event loop only.
    private final class Sending: @unchecked Sendable {
        // @unchecked Sendable: used on the channel's event loop alone (each step is scheduled there).
        let handle: NIOFileHandle
        let channel: Channel
        let end: Int
        let keepAlive: Bool
        let stallLimit: TimeAmount
        let statistics: HTTPServerStatistics
        let finished: @Sendable () -> Void
        var watchdog: Scheduled<Void>?
        var done = false

        init(handle: NIOFileHandle, channel: Channel, end: Int, keepAlive: Bool, stallLimit: TimeAmount, statistics: HTTPServerStatistics,
             finished: @escaping @Sendable () -> Void) {
            self.handle = handle
            self.channel = channel
            self.end = end
            self.keepAlive = keepAlive
            self.stallLimit = stallLimit
            self.statistics = statistics
            self.finished = finished
        }

        /// Sends the slice from `at`, or the end of the answer.
        func next(from at: Int) {
            guard at < end else {
                let sent = channel.writeAndFlush(HTTPServerResponsePart.end(nil))
                sent.whenComplete { [self] result in
                    finish()
                    if case .failure = result { channel.close(promise: nil) } else if !keepAlive { channel.close(promise: nil) }
                }
                return
            }
            let upTo = min(end, at + FileSender.slice)
            let region = FileRegion(fileHandle: handle, readerIndex: at, endIndex: upTo)
            watchdog = channel.eventLoop.scheduleTask(in: stallLimit) { [self] in
                statistics.count(.stalled)
                channel.close(promise: nil)
            }
            channel.writeAndFlush(HTTPServerResponsePart.body(.fileRegion(region))).whenComplete { [self] result in
                watchdog?.cancel()
                switch result {
                case .success: next(from: upTo)
                case .failure:
                    finish()
                    channel.close(promise: nil)
                }
            }
        }

        private func finish() {
            guard !done else { return }
            done = true
            try? handle.close()
            finished()
        }
    }
}
