import CV4L2Shim
import CVHostCore
import Glibc

/// One camera control under the stable name users type (`--control brightness=140`), which
/// does not change when the kernel renames its own control names.
public struct V4L2ControlInfo: Sendable {
    public enum Kind: String, Sendable { case integer, boolean, menu, button, other }

    public let name: String
    public let id: UInt32
    public let kind: Kind
    public let minimum: Int64
    public let maximum: Int64
    public let step: Int64
    public let defaultValue: Int64
    /// Menu items by value (menus only).
    public let menu: [(value: Int64, name: String)]
    public let isReadOnly: Bool
    public let isInactive: Bool
}

/// The table of controls cvhost knows, by stable name, and how to read and write them.
public enum V4L2Controls {
    /// Stable name → V4L2 control id. One table, so a name means the same on every camera.
    public static let table: [(name: String, id: UInt32)] = [
        ("brightness", UInt32(V4L2_CID_BRIGHTNESS)),
        ("contrast", UInt32(V4L2_CID_CONTRAST)),
        ("saturation", UInt32(V4L2_CID_SATURATION)),
        ("hue", UInt32(V4L2_CID_HUE)),
        ("gamma", UInt32(V4L2_CID_GAMMA)),
        ("gain", UInt32(V4L2_CID_GAIN)),
        ("auto_gain", UInt32(V4L2_CID_AUTOGAIN)),
        ("sharpness", UInt32(V4L2_CID_SHARPNESS)),
        ("hflip", UInt32(V4L2_CID_HFLIP)),
        ("vflip", UInt32(V4L2_CID_VFLIP)),
        ("power_line_frequency", UInt32(V4L2_CID_POWER_LINE_FREQUENCY)),
        ("backlight_compensation", UInt32(V4L2_CID_BACKLIGHT_COMPENSATION)),
        ("white_balance_auto", UInt32(V4L2_CID_AUTO_WHITE_BALANCE)),
        ("white_balance_temperature", UInt32(V4L2_CID_WHITE_BALANCE_TEMPERATURE)),
        ("exposure_auto", UInt32(V4L2_CID_EXPOSURE_AUTO)),
        ("exposure_absolute", UInt32(V4L2_CID_EXPOSURE_ABSOLUTE)),
        ("focus_auto", UInt32(V4L2_CID_FOCUS_AUTO)),
        ("focus_absolute", UInt32(V4L2_CID_FOCUS_ABSOLUTE)),
        ("auto_focus_range", UInt32(V4L2_CID_AUTO_FOCUS_RANGE)),
        ("zoom_absolute", UInt32(V4L2_CID_ZOOM_ABSOLUTE)),
        ("torch", UInt32(V4L2_CID_FLASH_LED_MODE)),
        ("test_pattern", UInt32(V4L2_CID_TEST_PATTERN)),
    ]

    public static func id(named name: String) -> UInt32? { table.first { $0.name == name }?.id }

    public static func name(of id: UInt32) -> String? { table.first { $0.id == id }?.name }

    /// The control as the device describes it; nil when the device does not have it.
    static func query(fd: V4L2Descriptor, id: UInt32) -> V4L2ControlInfo? {
        var q = v4l2_queryctrl()
        q.id = id
        guard V4L2IO.tryIoctl(fd, CV4L2Shim_VIDIOC_QUERYCTRL, &q) == 0, q.flags & UInt32(V4L2_CTRL_FLAG_DISABLED) == 0 else {
            return nil
        }
        let kind: V4L2ControlInfo.Kind
        switch q.type {
        case V4L2_CTRL_TYPE_INTEGER.rawValue: kind = .integer
        case V4L2_CTRL_TYPE_BOOLEAN.rawValue: kind = .boolean
        case V4L2_CTRL_TYPE_MENU.rawValue, V4L2_CTRL_TYPE_INTEGER_MENU.rawValue: kind = .menu
        case V4L2_CTRL_TYPE_BUTTON.rawValue: kind = .button
        default: kind = .other
        }
        var items: [(Int64, String)] = []
        if kind == .menu && q.maximum >= q.minimum && q.maximum - q.minimum < 256 {
            for v in q.minimum...q.maximum {
                var m = v4l2_querymenu()
                m.id = id
                m.index = UInt32(v)
                if V4L2IO.tryIoctl(fd, CV4L2Shim_VIDIOC_QUERYMENU, &m) == 0 {
                    let label = q.type == V4L2_CTRL_TYPE_MENU.rawValue ? V4L2IO.string(m.name) : String(m.value)
                    items.append((Int64(v), label))
                }
            }
        }
        return V4L2ControlInfo(name: name(of: id) ?? V4L2IO.string(q.name), id: id, kind: kind, minimum: Int64(q.minimum),
                               maximum: Int64(q.maximum), step: Int64(q.step), defaultValue: Int64(q.default_value),
                               menu: items, isReadOnly: q.flags & UInt32(V4L2_CTRL_FLAG_READ_ONLY) != 0,
                               isInactive: q.flags & UInt32(V4L2_CTRL_FLAG_INACTIVE) != 0)
    }

    /// Every control of the table the device has.
    static func available(fd: V4L2Descriptor) -> [V4L2ControlInfo] {
        table.compactMap { query(fd: fd, id: $0.id) }
    }

    static func get(fd: V4L2Descriptor, id: UInt32, device: String) throws -> Int64 {
        var c = v4l2_control()
        c.id = id
        try V4L2IO.ioctl(fd, CV4L2Shim_VIDIOC_G_CTRL, &c, "VIDIOC_G_CTRL", device: device)
        return Int64(c.value)
    }

    static func set(fd: V4L2Descriptor, id: UInt32, value: Int64, device: String) throws {
        var c = v4l2_control()
        c.id = id
        c.value = Int32(clamping: value)
        try V4L2IO.ioctl(fd, CV4L2Shim_VIDIOC_S_CTRL, &c, "VIDIOC_S_CTRL", device: device)
    }

    /// Reads a user's value for a control: a number, true/false/on/off, or a menu item's name.
    static func parse(_ text: String, for info: V4L2ControlInfo) -> Int64? {
        if let v = Int64(text) { return v }
        switch text.lowercased() {
        case "true", "on", "yes": return 1
        case "false", "off", "no": return 0
        default: break
        }
        let wanted = text.lowercased().filter { $0.isLetter || $0.isNumber }
        return info.menu.first { $0.name.lowercased().filter { $0.isLetter || $0.isNumber } == wanted }?.value
    }

    /// A value as users read it: a menu item's name where there is one.
    static func describe(_ value: Int64, for info: V4L2ControlInfo) -> String {
        if info.kind == .menu, let item = info.menu.first(where: { $0.value == value }) { return item.name }
        if info.kind == .boolean { return value != 0 ? "true" : "false" }
        return String(value)
    }
}
