import Foundation

/// The page's files (`web/` in this module's sources, copied beside the executable by the build
/// as the module's resources), served as they are: no build step, nothing from a CDN.
struct WebFiles: Sendable {
    let folder: String?

    /// Where the files are: $CVHOST_WEB_ROOT, the build's resource folder beside the executable,
    /// or an installation's share/cvhost/web.
    static func locate() -> WebFiles {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let dir = (exe as NSString).deletingLastPathComponent
        let candidates = [ProcessInfo.processInfo.environment["CVHOST_WEB_ROOT"],
                          dir + "/cvhost_CVHostHTTP.resources/web",
                          dir + "/../share/cvhost/web"].compactMap { $0 }
        return WebFiles(folder: candidates.first { FileManager.default.fileExists(atPath: $0 + "/index.html") })
    }

    static let types = ["html": "text/html; charset=utf-8", "js": "text/javascript; charset=utf-8",
                        "css": "text/css; charset=utf-8", "svg": "image/svg+xml", "png": "image/png"]

    /// The file for a request path ("/" is index.html); nil when there is none. Only names in the
    /// folder itself: no path leads out of it.
    func reply(for path: String) -> HTTPReply? {
        let name = path == "/" ? "index.html" : String(path.dropFirst())
        guard let folder, !name.isEmpty, !name.contains("/"), !name.hasPrefix("."),
              let type = Self.types[(name as NSString).pathExtension],
              let data = FileManager.default.contents(atPath: folder + "/" + name) else { return nil }
        var headers = [("Cache-Control", "no-cache")]
        if type.hasPrefix("text/html") { headers += Self.pageHeaders }
        return HTTPReply(status: 200, contentType: type, body: Array(data), headers: headers)
    }

    /// The page runs only its own script and style, talks only to this server, shows pictures it
    /// made (blob: URLs of the stream's JPEGs), and may not be framed by another page.
    static let pageHeaders = [
        ("Content-Security-Policy",
         "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; connect-src 'self'; "
            + "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
        ("X-Frame-Options", "DENY"),
    ]
}
