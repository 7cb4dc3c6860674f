import CVHostTestSupport
import Foundation
import Glibc
import Testing

/// What a camera on the network, or a name from outside, can send cvhost, and what it must not
/// do to it: a frame without end must not grow the process without bound or end the input.
@Suite("hostile inputs")
struct HostileInputTests {
    /// The clip as the hostile server reads it: H.264 Annex B, one slice a frame, 50 frames.
    static func annexB() throws -> String {
        try MediaFixtures.make("hostile.h264", ["-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25", "-frames:v", "50", "-c:v", "libx264",
                                                "-bf", "0", "-g", "25", "-x264-params", "slices=1", "-pix_fmt", "yuv420p", "-f", "h264"])
    }

    /// The peak resident memory of a process (VmHWM), in MB.
    static func peakMB(_ pid: pid_t) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }) else { return nil }
        return Int(line.split(separator: " ").dropFirst().first ?? "").map { $0 / 1024 }
    }

    /// The frames' media times of a run's results.
    static func times(_ r: CommandResult) -> [Double] { r.events("result").compactMap { $0["pts"] as? Double } }

    @Test("an RTSP camera that sends one frame without end (300 MB of packets of one timestamp): the frame is dropped as corrupt, memory stays bounded, every other frame arrives")
    func endlessFrame() throws {
        let args = ["run", "--plugin", "null:results=1,backpressure=block", "--metrics-interval", "0"]
        // The same camera without the endless frame: the frames to expect.
        let plain = try TestServer("hostile_rtsp_server.py", ["--clip", try Self.annexB(), "--good", "1000"])
        defer { plain.stop() }
        let expected = Self.times(try CVHostBinary.run(args + ["--input", "rtsp://127.0.0.1:\(plain.port)/cam"], timeout: 60))
        #expect(expected.count >= 45)
        let server = try TestServer("hostile_rtsp_server.py", ["--clip", try Self.annexB(), "--good", "10", "--endless", "300"])
        defer { server.stop() }
        let peak = Box<Int?>(nil)
        let r = try CVHostBinary.run(args + ["--input", "rtsp://127.0.0.1:\(server.port)/cam"], timeout: 120, withStdin: false) { running in
            // The peak is read while the run goes on (it is gone once the stream ends).
            _ = running.wait(timeout: 100) { out in
                peak.value = Self.peakMB(running.pid) ?? peak.value
                return out.contains("\"event\":\"session.stopped\"") || out.contains("\"event\":\"session.error\"")
            }
        }
        // Every frame of the clip (the endless one had a time of its own: those after it are 0.04 s later).
        let times = Self.times(r).map { $0 > 0.39 ? $0 - 0.04 : $0 }
        #expect(zip(times, expected).allSatisfy { abs($0 - $1) < 0.001 } && times.count == expected.count,
                "\(times.count) frames of \(expected.count): \(r.stderr.suffix(1500))")
        let lost = r.events("session.frames_lost").filter { $0["reason"] as? String == "corrupt" }
        #expect(lost.reduce(0) { $0 + ($1["count"] as? Int ?? 0) } == 1, "\(lost)")
        #expect(r.stderr.contains("was dropped as damaged; reading goes on at the next frame"), "\(r.stderr.suffix(1500))")
        // 300 MB were sent: the frame's packets are capped (32 MB), the reader's queue too (64 MB).
        let mb = try #require(peak.value)
        #expect(mb < 260, "peak RSS \(mb) MB")
        // The server's clip ends: on RTSP that is a lost connection, not a crash.
        #expect(r.exitCode == 2, "\(r.stderr.suffix(500))")
    }
}
