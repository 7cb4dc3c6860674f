import Foundation

/// A real server the tests start on loopback and stop when done (Tests/Servers/*.py): it prints
/// "ready PORT" once it listens on a port it picked.
public final class TestServer: @unchecked Sendable {
    // @unchecked Sendable: `process` is set once in init; Process is used from one test at a time.
    public let port: Int
    private let process: Process

    /// Starts `script` (a path under Tests/Servers) with `arguments`, and waits up to 20 s for it to listen.
    public init(_ script: String, _ arguments: [String]) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: PluginFixtures.packageRoot + "/Tests/Servers/" + script)
        p.arguments = arguments
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.standardError
        p.standardInput = FileHandle.nullDevice
        try p.run()
        process = p
        var line = Data()
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, !line.contains(UInt8(ascii: "\n")) {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        let text = String(decoding: line, as: UTF8.self)
        guard text.hasPrefix("ready "), let port = Int(text.dropFirst(6).prefix { $0.isNumber }) else {
            p.terminate()
            throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: "\(script) did not start: \(text)"])
        }
        self.port = port
    }

    /// Stops the server (SIGKILL: as a crash or a pulled cable would) and waits for it.
    public func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    deinit { stop() }
}

/// Media for stream tests, made from the demo video with FFmpeg.
public enum StreamFixtures {
    /// The demo video (QR, EAN-13, Code 128) played `times` times in a row, as H.264 MP4.
    public static func longCodes(times: Int) throws -> String {
        try MediaFixtures.make("codes-x\(times).mp4", ["-stream_loop", "\(times - 1)", "-i", BarcodeFixtures.demoVideo, "-c", "copy"])
    }
}

/// A value set on one thread and read on another (a server restarted from a callback).
public final class Box<T>: @unchecked Sendable {
    // @unchecked Sendable: every access holds the lock.
    private let lock = NSLock()
    private var stored: T
    public init(_ value: T) { stored = value }
    public var value: T {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}

/// A loopback port free at the moment of asking, for servers that cannot pick their own and say
/// which (FFmpeg listening for SRT or RTMP). Another process could take it before the server does:
/// good enough for tests on one machine.
public func freeLoopbackPort(udp: Bool = false) -> Int {
    let fd = socket(AF_INET, udp ? Int32(SOCK_DGRAM.rawValue) : Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 ? getsockname(fd, $0, &length) : -1 }
    }
    return Int(UInt16(bigEndian: address.sin_port))
}
