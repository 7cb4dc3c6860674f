/// Where lines go. `write` never waits for a network or a disk that is slow (a sink that can be
/// slow queues), is thread-safe, and keeps the order of lines written from one thread.
public protocol OutputSink: AnyObject, Sendable {
    func write(_ line: OutputLine)
}

extension OutputSink {
    /// Writes an event built with `JSONObject.envelope(...)`.
    public func write(_ object: JSONObject) {
        write(object.line())
    }
}
