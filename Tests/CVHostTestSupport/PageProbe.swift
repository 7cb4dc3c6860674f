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

    /// What a user does on the page, in order (page_probe.py's STEPS: `["wait": EXPRESSION]`,
    /// `["click": EXPRESSION giving [x, y]]`, `["type": TEXT]`, `["screenshot": PATH]`), all within `timeout` seconds; the
    /// last wait's value, nil when a step never came true.
    public static func steps<T>(_ url: String, _ steps: [[String: String]], timeout: Double = 60, as: T.Type = T.self) -> T? {
        guard let script = try? JSONSerialization.data(withJSONObject: steps) else { return nil }
        return value(url, String(decoding: script, as: UTF8.self), timeout: timeout)
    }

    /// An expression giving the centre of the element with `id`, for a click.
    public static func centre(of id: String) -> String {
        "(r => r.width > 0 && [r.x + r.width / 2, r.y + r.height / 2])(document.getElementById('\(id)').getBoundingClientRect())"
    }

}
