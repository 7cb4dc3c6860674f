import CVHostCore
import CVHostTestSupport
import Foundation
import Testing
@testable import CVHostRun

/// What an input added over HTTP may name (--allow-inputs), judged from its text alone.
@Suite("Inputs an HTTP client may add")
struct InputPolicyTests {
    static func input(_ text: String) -> InputSpec { InputSpec(kind: .input(text), name: nil) }

    @Test("what a text names: streams cvhost connects to, those that make it listen, files (whatever the text), the test pattern (nothing)")
    func kinds() {
        for url in ["rtsp://cam/1", "rtsps://u:p@cam/1", "http://cam/mjpg", "https://cam/x.m3u8", "srt://cam:9000", "srt://cam:9000?mode=caller",
                    "udp://239.0.0.1:1234", "udp://10.0.0.5:5000", "tcp://127.0.0.1:9000", "rtmp://cam/live", "tcp://h:1?listen=0"] {
            #expect(InputPolicy.kind(of: url) == .network, "\(url)")
        }
        for url in ["tcp://127.0.0.1:9000?listen=1", "tcp://0.0.0.0:9000?listen", "srt://:9000?mode=listener", "srt://h:1?Mode=Rendezvous",
                    "rtmp://0.0.0.0/live?listen=1", "http://0.0.0.0:8000/x?listen=2", "udp://@:1234", "udp://:1234", "udp://0.0.0.0:1234",
                    "rtp://[::]:5004", "rtsp://0.0.0.0:8554/x?rtsp_flags=listen"] {
            #expect(InputPolicy.kind(of: url) == .listen, "\(url)")
        }
        for text in ["/etc/shadow", "clip.mp4", "./a=b.mp4", "/srv/*.jpg", "file:///etc/passwd", "concat:a|b", "gopher://x"] {
            #expect(InputPolicy.kind(of: text) == .files, "\(text)")
        }
        #expect(InputPolicy.kind(of: "testsrc") == nil && InputPolicy.kind(of: "testsrc:64x48@5") == nil)
    }

    @Test("by default: network streams and the test pattern only; a file is refused in one sentence whether it exists or not; a camera, a listener each named with the fix")
    func standard() {
        let p = InputPolicy.standard
        #expect(p.refusal(Self.input("rtsp://cam/1")) == nil && p.refusal(Self.input("testsrc")) == nil)
        let there = p.refusal(Self.input("/etc/hostname")) ?? ""
        let missing = p.refusal(Self.input("/etc/no-such-file")) ?? ""
        #expect(there.contains("files are added over HTTP only when the run allows them (--allow-inputs files, or a folder)"))
        #expect(there.replacingOccurrences(of: "/etc/hostname", with: "X") == missing.replacingOccurrences(of: "/etc/no-such-file", with: "X"))
        #expect(p.refusal(InputSpec(kind: .camera("/dev/video0"), name: "cam"))?.contains("--allow-inputs devices") == true)
        #expect(p.refusal(Self.input("tcp://127.0.0.1:9?listen=1"))?.contains("would make cvhost listen on a port") == true)
        // The URL's password is never in a refusal.
        #expect(p.refusal(Self.input("srt://user:s3cret@:9000?mode=listener"))?.contains("s3cret") == false)
    }

    @Test("--allow-inputs: kinds and folders joined by +; a file within a folder (by its real path) is taken, one outside or missing refused alike; bad words refused naming them")
    func parsed() throws {
        let dir = TestFolders.make("allowed")
        try Data().write(to: URL(fileURLWithPath: dir + "/a.mp4"))
        let outside = TestFolders.make("outside")
        try Data().write(to: URL(fileURLWithPath: outside + "/b.mp4"))
        symlink(outside + "/b.mp4", dir + "/link.mp4")
        let p = try InputPolicy(parsing: "network+\(dir)")
        #expect(p.refusal(Self.input(dir + "/a.mp4")) == nil && p.refusal(Self.input(dir + "/*.mp4")) == nil && p.refusal(Self.input(dir)) == nil)
        let out = p.refusal(Self.input(outside + "/b.mp4")) ?? ""
        #expect(out.contains("is not in a folder this run takes files from over HTTP"))
        #expect(p.refusal(Self.input(dir + "/link.mp4")) != nil, "a link out of the folder")
        #expect(p.refusal(Self.input(dir + "/../outside/none.mp4")) != nil && p.refusal(Self.input(dir + "/none.mp4")) != nil)
        #expect(try InputPolicy(parsing: "all").kinds == Set(InputPolicy.Kind.allCases))
        #expect(try InputPolicy(parsing: "files,listen").refusal(Self.input("udp://@:5000")) == nil)
        #expect(try InputPolicy(parsing: "files").refusal(Self.input("rtsp://cam/1"))?.contains("a network stream") == true)
        for (text, said) in [("cameras", "--allow-inputs 'cameras': give network, files"), ("/no/such/folder", "no such folder"), ("+", "needs at least one")] {
            #expect(throws: UsageError.self) { try InputPolicy(parsing: text) }
            do { _ = try InputPolicy(parsing: text) } catch { #expect(error.description.contains(said), "\(error.description)") }
        }
    }
}
