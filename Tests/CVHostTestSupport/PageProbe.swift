import Foundation

/// A page read while it runs in headless Chromium, through the DevTools protocol
/// (Tests/Servers/page_probe.py): what --dump-dom cannot see, such as a streamed picture drawn over.
public enum PageProbe {
    /// The first true value `expression` gives in the page at `url` within `timeout` seconds, read
    /// back from JSON as `T`; nil when it never came (or Chromium could not run).
    public static func value<T>(_ url: String, _ expression: String, timeout: Double = 40, as: T.Type = T.self) -> T? {
        guard let out = try? Tool.run("/usr/bin/python3", [PluginFixtures.packageRoot + "/Tests/Servers/page_probe.py", url, expression,
                                                           String(timeout)]) else { return nil }
        return (try? JSONSerialization.jsonObject(with: Data(out.output.utf8), options: .fragmentsAllowed)) as? T
    }
}
