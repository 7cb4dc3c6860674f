import Foundation

/// A Kafka cluster on loopback ports for a test: librdkafka's mock cluster (rdkafka_mock.h),
/// hosted by Tests/Servers/kafka_mock_cluster.c (built here with cc), so that cvhost and a
/// consumer (Debian's kcat) reach it as a real cluster. Its brokers are taken down and brought
/// back by command; what it holds lives as long as the object.
public final class KafkaCluster: @unchecked Sendable {
    // @unchecked Sendable: commands are sent and answered under `lock`.
    public let bootstrap: String
    private let process: Process
    private let commands: FileHandle
    private let answers: FileHandle
    private let lock = NSLock()

    /// The helper, built once per test process.
    private static let helper: Result<String, Error> = Result {
        let out = TestFolders.root + "/kafka_mock_cluster"
        try Tool.check("cc", ["-O1", "-o", out, PluginFixtures.packageRoot + "/Tests/Servers/kafka_mock_cluster.c", "-lrdkafka"])
        return out
    }

    /// Starts a cluster of `brokers` brokers with `topic` (`partitions` partitions).
    public init(brokers: Int = 3, topic: String, partitions: Int = 3) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: try KafkaCluster.helper.get())
        p.arguments = ["\(brokers)"]
        let input = Pipe(), output = Pipe()
        p.standardInput = input
        p.standardOutput = output
        p.standardError = FileHandle.standardError
        try p.run()
        process = p
        commands = input.fileHandleForWriting
        answers = output.fileHandleForReading
        bootstrap = KafkaCluster.readLine(answers)
        guard bootstrap.contains(":") else { throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: "the mock cluster did not start"]) }
        try command("topic \(topic) \(partitions)")
    }

    private static func readLine(_ h: FileHandle) -> String {
        var bytes = Data()
        while true {
            let b = (try? h.read(upToCount: 1)) ?? nil
            guard let b, !b.isEmpty, b[b.startIndex] != UInt8(ascii: "\n") else { break }
            bytes.append(b)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Sends a command (`down 1`, `up 1`, `alldown`, `allup`, `topic NAME N`) and waits for its answer.
    public func command(_ line: String) throws {
        let answer: String = lock.withLock {
            commands.write(Data((line + "\n").utf8))
            return KafkaCluster.readLine(answers)
        }
        guard answer == "ok" else { throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: "mock cluster: \(line): \(answer)"]) }
    }

    /// Every message of `topic` from its beginning, read with kcat: (key, headers, payload), per partition in order.
    public func messages(topic: String) throws -> [(key: String, headers: String, payload: String)] {
        // Fields split by a byte no JSON line holds.
        let out = try Tool.check("kcat", ["-b", bootstrap, "-t", topic, "-C", "-e", "-q", "-o", "beginning", "-f", "%k\u{1}%h\u{1}%s\n"])
        return out.split(separator: "\n").compactMap { line in
            let f = line.split(separator: "\u{1}", omittingEmptySubsequences: false)
            return f.count == 3 ? (String(f[0]), String(f[1]), String(f[2])) : nil
        }
    }

    deinit {
        try? commands.close()
        process.waitUntilExit()
    }
}
