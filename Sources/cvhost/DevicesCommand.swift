import ArgumentParser
import CVHostCore
import CVHostRun
import CVHostLines
import CVHostOutput
import CVHostV4L2

struct DevicesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract: "List the cameras (V4L2 video-capture nodes) with their formats, frame rates and controls.",
        discussion: """
            Metadata-only and output nodes are left out. Controls are listed under the stable names that \
            `cvhost run --control NAME=VALUE` takes. With --json, each camera is one JSON line (event "device"; \
            schema: share/cvhost/cvhost-events.schema.json).
            """)

    @Flag(help: "One JSON object per camera on stdout, for programs.")
    var json = false

    func run() throws {
        let nodes = V4L2Discovery.captureNodes()
        var devices: [V4L2CaptureDevice] = []
        for node in nodes {
            do {
                devices.append(try V4L2CaptureDevice(path: node.path))
            } catch {
                Log.warning("\(node.path): \(error)")
            }
        }
        if json {
            let writer = JSONLineWriter()
            for d in devices { writer.write(DevicesCommand.line(d)) }
            return try asCommandErrors { try checkOutput(writer) }
        }
        if devices.isEmpty {
            print("No cameras found (no V4L2 video-capture node under /dev).")
            return
        }
        for d in devices {
            print("\(d.path): \(d.localizedName) (\(d.node.driver), \(d.node.busInfo))")
            print("  unique id: \(d.uniqueID)")
            if let a = d.activeFormat {
                print("  active:    \(a.deviceFourCC) \(a.width)x\(a.height) @ \(FrameRateRange.format(d.activeFrameRate)) fps")
            }
            print("  formats:")
            var lastCode = ""
            for f in d.formats {
                if f.deviceFourCC != lastCode {
                    let how = f.isJPEG ? " (decoded by cvhost to i420)"
                        : f.pixelFormat.map { " (read as \($0.name))" } ?? " (converted to i420 by libv4lconvert)"
                    print("    \(f.deviceFourCC)" + how)
                    lastCode = f.deviceFourCC
                }
                print("      \(f.width)x\(f.height)  " + f.frameRateRanges.map { $0.description }.joined(separator: ", "))
            }
            let controls = d.controls
            print("  controls:" + (controls.isEmpty ? " none of cvhost's table" : ""))
            for c in controls {
                let range = c.kind == .menu ? c.menu.map(\.name).joined(separator: "|") : "\(c.minimum)..\(c.maximum)"
                let value = d.value(of: c) ?? "?"
                print("    \(c.name.padding(toLength: 26, withPad: " ", startingAt: 0)) \(c.kind.rawValue) \(range) = \(value)")
            }
            print("")
        }
    }

    static func line(_ d: V4L2CaptureDevice) -> JSONObject {
        var e = JSONObject.envelope(event: "device", source: nil, tsNs: HostClock.wallNs())
        SessionEventLines.setNode(d.node, in: &e)
        e.set("connected", d.isConnected)
        if let a = d.activeFormat {
            e.set("active_format", object: SessionEventLines.activeFormat(a, fps: d.activeFrameRate))
        } else {
            e.set("active_format", nil as String?)
        }
        e.set("formats", array: d.formats.map { f in
            var o = JSONObject()
            o.set("fourcc", f.deviceFourCC)
            o.set("pixel_format", f.pixelFormat?.name)
            o.set("width", f.width)
            o.set("height", f.height)
            o.set("frame_rates", array: f.frameRateRanges.map { r in
                var j = JSONObject()
                j.set("min", r.minFrameRate, decimals: 3)
                j.set("max", r.maxFrameRate, decimals: 3)
                return j
            })
            return o
        })
        e.set("controls", array: d.controls.map { ControlJSON.make($0, value: d.value(of: $0)) })
        return e
    }
}
