import CAVFilter
import CFFmpeg
import CVHostCore
import Foundation

/// The boxes of a snapshot's frame drawn on it with their labels (`--snapshots DIR:draw=true`), by
/// FFmpeg's drawbox and drawtext filters (libavfilter) in the DejaVu Sans font: a filter graph
/// made for each picture (its boxes vary), fed a copy of the frame. A label is set as the filter's
/// option (av_opt_set), never parsed as filter syntax, and drawn as it is (`expansion=none`): a
/// plugin's label cannot reach the graph's grammar.
///
/// Not thread-safe: the snapshot writer's queue uses it.
package final class SnapshotDrawing {
    package struct Mark {
        package let region: JPEGEncoder.Region
        package let label: String
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static let fontFile = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
    /// A label is drawn up to this many characters: a plugin's 200 KB label would fill no picture.
    package static let maxLabel = 80
    private let reader = DecodedFrameReader()

    /// `pixels` (I420) with `marks` drawn, as a new buffer.
    func draw(_ pixels: PixelBuffer, marks: [Mark]) throws(Failure) -> PixelBuffer {
        var owned = avfilter_graph_alloc()
        defer { avfilter_graph_free(&owned) }
        guard let graph = owned else { throw Failure(description: "no memory for drawing") }
        func filter(_ name: String, _ args: String?, options: [(String, String)] = []) throws(Failure) -> UnsafeMutablePointer<AVFilterContext> {
            guard let kind = avfilter_get_by_name(name), let f = avfilter_graph_alloc_filter(graph, kind, nil) else {
                throw Failure(description: "FFmpeg has no \(name) filter")
            }
            for (key, value) in options {
                // On the filter's own options (its private class: AV_OPT_SEARCH_CHILDREN).
                guard av_opt_set(f, key, value, 1) >= 0 else { throw Failure(description: "the \(name) filter takes no \(key)") }
            }
            guard avfilter_init_str(f, args) >= 0 else { throw Failure(description: "the \(name) filter did not start") }
            return f
        }
        let source = try filter("buffer", "video_size=\(pixels.width)x\(pixels.height):pix_fmt=yuv420p:time_base=1/1:pixel_aspect=1/1")
        var last = source
        let size = max(12, pixels.height / 40)
        let drawText = FileManager.default.isReadableFile(atPath: Self.fontFile)
        for m in marks {
            let box = try filter("drawbox", "x=\(m.region.x):y=\(m.region.y):w=\(m.region.width):h=\(m.region.height):color=yellow:t=\(max(2, pixels.height / 360))")
            guard avfilter_link(last, 0, box, 0) >= 0 else { throw Failure(description: "cannot link the drawing filters") }
            last = box
            guard drawText, !m.label.isEmpty else { continue }
            let text = try filter("drawtext", nil, options: [
                ("fontfile", Self.fontFile), ("text", m.label), ("expansion", "none"), ("fontsize", String(size)),
                ("fontcolor", "white"), ("box", "1"), ("boxcolor", "black@0.6"), ("boxborderw", "3"),
                ("x", String(max(0, m.region.x))), ("y", String(max(0, m.region.y - size - 8))),
            ])
            guard avfilter_link(last, 0, text, 0) >= 0 else { throw Failure(description: "cannot link the drawing filters") }
            last = text
        }
        let sink = try filter("buffersink", nil)
        guard avfilter_link(last, 0, sink, 0) >= 0, avfilter_graph_config(graph, nil) >= 0 else {
            throw Failure(description: "the drawing filters did not fit together")
        }
        var ownedFrame = av_frame_alloc()
        defer { av_frame_free(&ownedFrame) }
        guard let frame = ownedFrame else { throw Failure(description: "no memory for drawing") }
        frame.pointee.format = AV_PIX_FMT_YUV420P.rawValue
        frame.pointee.width = Int32(pixels.width)
        frame.pointee.height = Int32(pixels.height)
        frame.pointee.pts = 0
        guard av_frame_get_buffer(frame, 0) >= 0 else { throw Failure(description: "no memory for drawing") }
        pixels.copyI420(into: frame)
        guard av_buffersrc_add_frame(source, frame) >= 0, av_buffersrc_add_frame(source, nil) >= 0 else {
            throw Failure(description: "the drawing filters refused the frame")
        }
        var ownedDrawn = av_frame_alloc()
        defer { av_frame_free(&ownedDrawn) }
        guard let drawn = ownedDrawn else { throw Failure(description: "no memory for drawing") }
        guard av_buffersink_get_frame(sink, drawn) >= 0 else { throw Failure(description: "the drawing filters gave no frame") }
        do {
            return try reader.pixelBuffer(drawn, input: "a snapshot")
        } catch {
            throw Failure(description: "the drawn frame could not be read: \(error)")
        }
    }
}
