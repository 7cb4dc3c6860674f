import Testing
@testable import CVHostCore

/// Secrets in URLs are used, never printed.
@Suite("password redaction")
struct PasswordRedactionTests {
    @Test("a URL's password and every query value become ***; elsewhere parameters named like secrets; the rest stays", arguments: [
        ("rtsp://admin:s3cret@10.0.0.5/stream1", "rtsp://admin:***@10.0.0.5/stream1"),
        ("http://10.0.0.5/video.cgi?user=admin&pwd=s3cret&channel=1", "http://10.0.0.5/video.cgi?user=***&pwd=***&channel=***"),
        ("http://cam/mjpg?token=abc#x", "http://cam/mjpg?token=***#x"),
        ("rtsp://u:p@cam/live?Password=zz", "rtsp://u:***@cam/live?Password=***"),
        ("cannot open http://cam/a?key=K1 (refused)", "cannot open http://cam/a?key=*** (refused)"),
        ("http://cam/a?keyframe=1&monkey=2", "http://cam/a?keyframe=***&monkey=***"),
        ("clip.mp4", "clip.mp4"),
        // A password holding '/', '?', '#' or '@', written unescaped: the user info runs to the last '@'.
        ("cannot open rtsp://cam:Zq/9Secret@127.0.0.1:1/s: refused", "cannot open rtsp://cam:***@127.0.0.1:1/s: refused"),
        ("rtsp://cam:a?b#c@host/s", "rtsp://cam:***@host/s"),
        ("mqtt://bus:p@ss@broker:1883/cvhost", "mqtt://bus:***@broker:1883/cvhost"),
        ("rtsp://user@host/s", "rtsp://user@host/s"),
        // Every query value, whatever its name: a passphrase, a pre-signed URL's credentials.
        ("srt://relay:9000?passphrase=Zq9secret1234&latency=200", "srt://relay:9000?passphrase=***&latency=***"),
        ("https://bucket.s3.amazonaws.com/c.mp4?X-Amz-Credential=AKIA%2F20261126&X-Amz-Security-Token=FwoG&X-Amz-Signature=9f2c",
         "https://bucket.s3.amazonaws.com/c.mp4?X-Amz-Credential=***&X-Amz-Security-Token=***&X-Amz-Signature=***"),
        ("http://host/a?mail=x@y.com", "http://host/a?mail=***"),
        ("http://host:8080/a?mail=x@y.com", "http://host:***@y.com"),
        ("two: rtsp://a:1@h/x and 'http://h/y?q=2'", "two: rtsp://a:***@h/x and 'http://h/y?q=***'"),
        ("--threshold=5? no &pwd=p", "--threshold=5? no &pwd=***"),
    ])
    func redacts(text: String, shown: String) {
        #expect(PasswordRedaction.redact(text) == shown)
    }
}
