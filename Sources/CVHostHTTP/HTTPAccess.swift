import Foundation
import NIOHTTP1

/// Who may use the server: with a token, the routes that carry the run's data or change it want
/// it, as `Authorization: Bearer TOKEN` or, for what a browser loads by URL (the page's picture
/// and events), `?token=TOKEN`. The page's own files hold no data and are served without it (the
/// page then asks for the data with the token of its own address: `/?token=TOKEN`), and so is
/// /healthz. Without a token, anyone who reaches the address may (the server then listens only
/// on loopback: `HTTPServer` refuses another address without a token), except what
/// `CrossSiteCheck` stops: the web pages a browser shows.
struct HTTPAccess: Sendable {
    let token: String?

    /// What is served without the token: the page's own files (`/`, `/view.js`...: a name of the
    /// page's kinds, no folder) and /healthz. Every other route wants it, those added later too.
    static func isOpen(_ path: String) -> Bool {
        if path == "/" || path == "/healthz" { return true }
        let name = path.dropFirst()
        return !name.contains("/") && WebFiles.types[(String(name) as NSString).pathExtension] != nil
    }

    func allows(path: String, query: [String: String], headers: HTTPHeaders) -> Bool {
        guard let token, !Self.isOpen(path) else { return true }
        if let auth = headers.first(name: "authorization") {
            let parts = auth.split(separator: " ", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "bearer", Self.equal(String(parts[1]), token) { return true }
        }
        if let given = query["token"], Self.equal(given, token) { return true }
        return false
    }

    /// Compares in a time that does not depend on where the strings differ.
    static func equal(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        var diff = UInt8(x.count == y.count ? 0 : 1)
        for i in 0..<max(x.count, y.count) {
            diff |= (i < x.count ? x[i] : 0) ^ (i < y.count ? y[i] : 0)
        }
        return diff == 0
    }
}
