import CVHostCore
import CVHostLines

/// `image.scanned`: for each still image of a folder, a glob or a list, what one plugin made of it
/// (how many results, whether its call failed), so that images with nothing are named too, as
/// zbarimg reports each file. Written after the image's results, in frame order.
enum ImageScanReport {
    static func line(image: String, stamp: HostServices.FrameStamp, source: String, plugin: String, pluginIndex: Int,
                     results: Int, failed: Bool) -> OutputLine {
        var e = JSONObject.envelope(event: "image.scanned", source: source, plugin: plugin, pluginIndex: pluginIndex,
                                    seq: stamp.sequence, tsNs: stamp.captureTimeNs, ptsNs: stamp.presentationTimeNs)
        e.set("image", image)
        e.set("results", results)
        e.set("failed", failed)
        return e.line()
    }
}
