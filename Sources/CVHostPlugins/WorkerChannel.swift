import CVHostCore
import CWorkerIPC
import Glibc

/// One end of a SOCK_SEQPACKET socket between cvhost and a plugin's worker process: messages
/// kept whole (a packet is a message, or part of one: long results are split into packets of at
/// most 32 KiB, each led by a byte saying whether more follow), with descriptors attached.
final class WorkerChannel: @unchecked Sendable {
    // @unchecked Sendable: each channel is used by one thread at a time (its instance's).
    let fd: Int32
    /// Where packets are received, kept: a call's messages arrive on every frame.
    private var buffer = [UInt8](repeating: 0, count: WorkerChannel.packetPayload + 1)

    init(fd: Int32) { self.fd = fd }

    /// What receive() got.
    enum Received {
        case message(WorkerMessage, fds: [Int32])
        /// The other end closed (the worker ended, or cvhost did).
        case closed
        case timedOut
        /// A read error, or bytes that are not a message.
        case failed(String)
        /// A message of a kind this version does not know (the other end is newer): answer it.
        case unknownKind(UInt8)
    }

    static let packetPayload = 32 * 1024

    /// A connected pair: (cvhost's end, the worker's end), both close-on-exec.
    static func pair() throws(PluginLoadError) -> (WorkerChannel, WorkerChannel) {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
            let e = errno
            throw PluginLoadError(.createFailed, "cannot make a socket for a plugin worker", cause: Errno(rawValue: e))
        }
        return (WorkerChannel(fd: fds[0]), WorkerChannel(fd: fds[1]))
    }

    /// Sends a message. - Returns: false when the other end is gone.
    @discardableResult
    func send(_ message: WorkerMessage, fds: [Int32] = []) -> Bool {
        let bytes = message.encoded()
        var start = 0
        repeat {
            let end = min(bytes.count, start + WorkerChannel.packetPayload)
            var packet: [UInt8] = [end < bytes.count ? 1 : 0]
            packet += bytes[start..<end]
            let attach = start == 0 ? fds : []
            let n = packet.withUnsafeBytes { p in
                attach.withUnsafeBufferPointer { a in
                    SystemCall.retryingNegated { cvhost_send_message(fd, p.baseAddress, p.count, a.baseAddress, Int32(attach.count)) }
                }
            }
            guard n >= 0 else { return false }
            start = end
        } while start < bytes.count
        return true
    }

    /// Receives the next message, waiting at most `timeoutMs` for each of its packets (-1: for ever).
    func receive(timeoutMs: Int32 = -1) -> Received {
        var message: [UInt8] = []
        var fds: [Int32] = []
        while true {
            var got: [Int32] = [-1, -1, -1, -1]
            var count: Int32 = 0
            let n = buffer.withUnsafeMutableBytes { b in
                got.withUnsafeMutableBufferPointer { g in
                    SystemCall.retryingNegated { cvhost_receive_message(fd, b.baseAddress, b.count, g.baseAddress, 4, &count, timeoutMs) }
                }
            }
            fds += got.prefix(Int(count))
            if n == 0 { return .closed }
            if n == -Int(ETIMEDOUT) { return .timedOut }
            if n < 0 {
                if n == -Int(ECONNRESET) || n == -Int(EPIPE) { return .closed }
                return .failed(Errno(rawValue: Int32(-n)).description)
            }
            message += buffer[1..<n]
            if buffer[0] == 0 { break }
            guard message.count <= 64 << 20 else { return .failed("a message of more than 64 MiB") }
        }
        guard let decoded = WorkerMessage(decoding: message) else {
            fds.forEach { _ = Glibc.close($0) }
            if let kind = message.first, !WorkerMessage.knows(kind: kind) { return .unknownKind(kind) }
            return .failed("a message that is not one")
        }
        return .message(decoded, fds: fds)
    }

    func close() { _ = Glibc.close(fd) }
}
