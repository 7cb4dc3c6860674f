import Foundation

/// A real mosquitto broker on a loopback port, started by a test and stopped when done. Its
/// state persists in its folder (a restart keeps the subscribers' sessions and their queued
/// messages), optionally with users (a password file) and TLS (certificates from `TestCA`).
public final class MQTTBroker: @unchecked Sendable {
    // @unchecked Sendable: `process` is replaced only by start()/stop(), called by one test at a time.
    public let port: Int
    public let folder: String
    private var process: Process?

    public struct Options: Sendable {
        public var users: [String: String] = [:]
        /// The broker's certificate and key (PEM files): the listener speaks TLS.
        public var tls: (certificate: String, key: String)?
        public init(users: [String: String] = [:], tls: (certificate: String, key: String)? = nil) {
            self.users = users
            self.tls = tls
        }
    }

    public init(_ options: Options = Options()) throws {
        folder = NSTemporaryDirectory() + "cvhost-mqtt-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        port = freeLoopbackPort()
        var config = """
            listener \(port) 127.0.0.1
            user \(String(cString: getpwuid(getuid()).pointee.pw_name))
            persistence true
            persistence_location \(folder)/
            max_queued_messages 0
            max_inflight_messages 0
            log_dest stderr
            log_type error
            log_type warning

            """
        if options.users.isEmpty {
            config += "allow_anonymous true\n"
        } else {
            let passwords = folder + "/passwords"
            _ = FileManager.default.createFile(atPath: passwords, contents: nil)
            for (user, password) in options.users {
                try Tool.check("mosquitto_passwd", ["-b", passwords, user, password])
            }
            config += "allow_anonymous false\npassword_file \(passwords)\n"
        }
        if let tls = options.tls {
            config += "certfile \(tls.certificate)\nkeyfile \(tls.key)\n"
        }
        try config.write(toFile: folder + "/mosquitto.conf", atomically: true, encoding: .utf8)
        try start()
    }

    /// Starts the broker (again, on the same port) and waits until it accepts connections.
    public func start() throws {
        let p = Tool.withSignalsUnblocked("/usr/sbin/mosquitto", ["-c", folder + "/mosquitto.conf"])
        p.standardOutput = FileHandle.standardError
        p.standardError = FileHandle.standardError
        p.standardInput = FileHandle.nullDevice
        try p.run()
        process = p
        try waitUntilListening(p, port: port, name: "mosquitto")
    }

    /// Stops the broker: SIGTERM by default (it saves its state, as a restarted service does),
    /// or SIGKILL.
    public func stop(signal: Int32 = SIGTERM) {
        guard let p = process, p.isRunning else { return }
        kill(p.processIdentifier, signal)
        p.waitUntilExit()
    }

    deinit {
        stop(signal: SIGKILL)
        try? FileManager.default.removeItem(atPath: folder)
    }
}

/// `mosquitto_sub` with a persistent session (QoS 1, -c): what a subscriber on another machine
/// receives, one line per message (`-v`: topic, a space, the payload).
public final class MQTTSubscriber: @unchecked Sendable {
    private let process: Process
    private let file: String

    public init(port: Int, topic: String = "#", arguments: [String] = []) throws {
        file = NSTemporaryDirectory() + "cvhost-mqtt-sub-\(UUID().uuidString).txt"
        _ = FileManager.default.createFile(atPath: file, contents: nil)
        let p = Tool.withSignalsUnblocked("/usr/bin/mosquitto_sub", ["-h", "127.0.0.1", "-p", "\(port)", "-t", topic, "-q", "1", "-c",
                                                                       "-i", "sub-\(UUID().uuidString.prefix(8))", "-v"] + arguments)
        p.standardOutput = FileHandle(forWritingAtPath: file)
        p.standardError = FileHandle.standardError
        p.standardInput = FileHandle.nullDevice
        try p.run()
        process = p
        // Subscribed once the broker has the subscription: give it a moment (it is local).
        usleep(300_000)
    }

    /// The messages received so far: (topic, payload).
    public var messages: [(topic: String, payload: String)] {
        let text = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map { line in
            let space = line.firstIndex(of: " ") ?? line.endIndex
            return (String(line[..<space]), String(line[space...].dropFirst()))
        }
    }

    /// Waits until `done(messages)` holds or `timeout` passes. - Returns: the messages then.
    public func wait(timeout: Double = 15, until done: ([(topic: String, payload: String)]) -> Bool) -> [(topic: String, payload: String)] {
        let deadline = Date().addingTimeInterval(timeout)
        var m = messages
        while !done(m) && Date() < deadline {
            usleep(50_000)
            m = messages
        }
        return m
    }

    public func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: file)
    }
}

/// Waits up to 10 s for a server `p` just started to accept connections on loopback `port`.
/// - Throws: naming it, when it does not (or ends first).
public func waitUntilListening(_ p: Process, port: Int, name: String) throws {
    let deadline = Date().addingTimeInterval(10)
    while Date() < deadline {
        if loopbackPortAccepts(port) { return }
        if !p.isRunning { break }
        usleep(20_000)
    }
    throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: "\(name) did not start on port \(port)"])
}

/// Whether something listens on a loopback TCP port.
public func loopbackPortAccepts(_ port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
    }
}

/// A certificate authority made with openssl for TLS tests, and a server certificate it signed
/// for 127.0.0.1 and localhost.
public struct TestCA: Sendable {
    public let certificate: String
    public let serverCertificate: String
    public let serverKey: String

    public init(in folder: String, name: String) throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let base = folder + "/" + name
        certificate = base + "-ca.pem"
        serverCertificate = base + "-server.pem"
        serverKey = base + "-server.key"
        let steps: [[String]] = [
            ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=\(name) test CA",
             "-keyout", base + "-ca.key", "-out", certificate],
            ["req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-keyout", serverKey, "-out", base + "-server.csr"],
            ["x509", "-req", "-in", base + "-server.csr", "-CA", certificate, "-CAkey", base + "-ca.key", "-CAcreateserial",
             "-days", "2", "-out", serverCertificate, "-extfile", base + "-san.cnf"],
        ]
        try "subjectAltName=IP:127.0.0.1,DNS:localhost\n".write(toFile: base + "-san.cnf", atomically: true, encoding: .utf8)
        for args in steps {
            try Tool.check("openssl", args)
        }
    }
}
