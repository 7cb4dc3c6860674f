import CVHostLines
import CVHostV4L2

/// A camera control as `cvhost devices --json` and `GET /controls` describe it.
public enum ControlJSON {
    public static func make(_ c: V4L2ControlInfo, value: String?) -> JSONObject {
        var o = JSONObject()
        o.set("name", c.name)
        o.set("type", c.kind.rawValue)
        o.set("min", c.minimum)
        o.set("max", c.maximum)
        o.set("step", c.step)
        o.set("default", c.defaultValue)
        o.set("value", value)
        o.set("read_only", c.isReadOnly)
        if c.kind == .menu { o.set("menu", strings: c.menu.map(\.name)) }
        return o
    }
}
