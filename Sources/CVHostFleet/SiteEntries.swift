import Foundation

/// The values a site keeps in its buckets, as JSON (documented in docs/fleet.md: any NATS
/// key-value client may write an input). A value another client wrote that is not one of these is
/// refused with one line naming its key (`SiteStore`), never taken half.

/// `inputs.NAME` in `cvhost-SITE`: an input given to the site, as `POST /inputs` and the state file
/// have it: `input` (what --input takes) or `device` (a camera's path), and the plugins it needs
/// (all the node's when left out).
public struct SiteInput: Codable, Sendable, Equatable {
    public var input: String?
    public var device: String?
    public var plugins: [String]?

    public init(input: String?, device: String?, plugins: [String]?) {
        self.input = input
        self.device = device
        self.plugins = plugins
    }

    /// What is wrong with it, if anything.
    var problem: String? {
        switch (input, device) {
        case (let i?, nil) where !i.isEmpty: break
        case (nil, let d?) where !d.isEmpty: break
        default: return "an input has one of \"input\" (what --input takes) or \"device\" (a camera's path)"
        }
        if let plugins, plugins.isEmpty || plugins.contains(where: \.isEmpty) { return "\"plugins\" names at least one plugin (leave it out for all of a node's)" }
        return nil
    }

    /// The add_input command that runs it as input `name` on a node.
    func command(_ name: String, replacing: Bool) -> String {
        var o: [String: Any] = ["command": replacing ? "change_input" : "add_input", "name": name]
        if let input { o["input"] = input }
        if let device { o["device"] = device }
        if let plugins { o["plugins"] = plugins }
        return RunCommandJSON.text(o)
    }
}

/// `NODE` in `cvhost-SITE-nodes`: a node's heartbeat, written every few seconds; it lasts the
/// bucket's TTL, so a node that stopped writing is gone from it by then.
public struct SiteNode: Codable, Sendable, Equatable {
    public var node: String
    /// The plugins it runs (an input needing another is not for it).
    public var plugins: [String]
    /// The most inputs it takes from the site.
    public var capacity: Int
    /// The inputs it runs now, each with its health (as GET /inputs says it).
    public var inputs: [String: InputState]
    /// Inputs it could not open, and why: another node may.
    public var refused: [String: String]?
    /// Its live view, when it has one (`--http`).
    public var http: String?
    public var version: String
    /// The store's format it reads.
    public var format: Int

    public struct InputState: Codable, Sendable, Equatable {
        public var state: String
        public var fps: Double?
        public var last_frame_age: Double?
    }
}

/// `NAME` in `cvhost-SITE-leases`: which node runs input NAME. It lasts the bucket's TTL unless its
/// node renews it (a write that names the lease's last revision, so that only its holder can).
public struct SiteLease: Codable, Sendable, Equatable {
    public var node: String
}

/// `format` in `cvhost-SITE`: the layout of the site's store; a cvhost that knows an older one
/// says so and takes no input.
struct SiteFormat: Codable, Equatable {
    var format: Int
}
