import Testing
@testable import CVHostCore

/// Secrets in URLs are used, never printed.
@Suite("password redaction")
struct PasswordRedactionTests {
    @Test("a URL's password and query parameters named like secrets become ***; the rest stays", arguments: [
        ("rtsp://admin:s3cret@10.0.0.5/stream1", "rtsp://admin:***@10.0.0.5/stream1"),
        ("http://10.0.0.5/video.cgi?user=admin&pwd=s3cret&channel=1", "http://10.0.0.5/video.cgi?user=admin&pwd=***&channel=1"),
        ("http://cam/mjpg?token=abc#x", "http://cam/mjpg?token=***#x"),
        ("rtsp://u:p@cam/live?Password=zz", "rtsp://u:***@cam/live?Password=***"),
        ("cannot open http://cam/a?key=K1 (refused)", "cannot open http://cam/a?key=*** (refused)"),
        ("http://cam/a?keyframe=1&monkey=2", "http://cam/a?keyframe=1&monkey=2"),
        ("clip.mp4", "clip.mp4"),
    ])
    func redacts(text: String, shown: String) {
        #expect(PasswordRedaction.redact(text) == shown)
    }
}
