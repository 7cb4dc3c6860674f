import CVHostCore
import CVHostLines

/// One result a plugin emitted (host->emit), checked: a type name `[a-z0-9_.]{1,64}` and one JSON
/// object, minified. Made into a `result` line by `line(...)`. Results that come from a worker
/// process are checked again on this side: the worker is the plugin's, not to be trusted.
package struct EmittedResult: Sendable {
    package let type: String
    /// One valid JSON object, minified.
    package let json: [UInt8]
    /// What the analytics read of it (noted while it was checked).
    package let fields: ResultFields
    /// The frame it belongs to (nil: none was processed yet).
    var frame: HostServices.FrameStamp?

    package struct Refusal: Error, CustomStringConvertible {
        package let description: String
    }

    /// Checks a result as a plugin handed it over (its frame is the caller's to set).
    package static func check(type: UnsafeBufferPointer<UInt8>, json: UnsafeBufferPointer<UInt8>) throws(Refusal) -> EmittedResult {
        let typeName = String(decoding: type, as: UTF8.self)
        guard isValidType(type) else {
            throw Refusal(description: "result type '\(typeName.prefix(80))' is not [a-z0-9_.]{1,64}")
        }
        let checked: (bytes: [UInt8], fields: ResultFields)
        do {
            checked = try JSONValidator.checkedResult(json)
        } catch {
            throw Refusal(description: "result of type \(typeName) dropped: \(error)")
        }
        if let problem = checked.fields.boundsProblem {
            throw Refusal(description: "result of type \(typeName) dropped: \(problem)")
        }
        return EmittedResult(type: typeName, json: checked.bytes, fields: checked.fields, frame: nil)
    }

    static func isValidType(_ s: UnsafeBufferPointer<UInt8>) -> Bool {
        !s.isEmpty && s.count <= 64 && s.allSatisfy { c in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(c) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c)
                || c == UInt8(ascii: "_") || c == UInt8(ascii: ".")
        }
    }

    /// The `result` line (with its newline): the envelope (source, plugin, frame, timestamps) around the data.
    package func line(source: String, plugin: String, pluginIndex: Int) -> OutputLine {
        var event = JSONObject.envelope(
            event: "result", source: source, plugin: plugin, pluginIndex: pluginIndex, seq: frame?.sequence,
            tsNs: frame?.captureTimeNs ?? HostClock.wallNs(), ptsNs: frame?.presentationTimeNs)
        if let image = frame?.imagePath { event.set("image", image) }
        return event.resultLine(type: type, data: json, fields: fields)
    }
}
