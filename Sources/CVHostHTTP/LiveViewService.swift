import CVHostLines

/// What the HTTP server asks of the run it serves: the routes whose answers only the run knows.
/// Given by the command line's layer (it knows the inputs, the plugins and the cameras).
public protocol LiveViewService: Sendable {
    /// `GET /metrics`: the Prometheus exposition of the run as it stands.
    func metricsText() -> String
    /// `GET /healthz`: healthy while frames flow from every input; the body says each input's state.
    func health() -> (healthy: Bool, json: String)
    /// `GET /controls`: what can be changed while running, and its values (a JSON object).
    func controls() -> String
    /// `POST /controls`: applies one change given as a JSON object, like a command on stdin.
    /// May block (a camera's ioctl): the server calls it off its event loop.
    /// - Returns: the HTTP status (200 applied, 400 a bad request, 404 no such target, 409 not
    ///   possible now) and the JSON answer.
    func control(_ body: [UInt8]) -> (status: Int, json: String)
    /// `GET`, `POST /inputs`, `GET`, `PUT`, `DELETE /inputs/NAME`: the command the route stands for
    /// (`get_inputs`, `add_input`, `change_input`, `remove_input`), with the name in the address
    /// (`target`) and the request's body. May block (an input opened, one stopped): off the event loop.
    func command(_ name: String, target: String?, body: [UInt8]) -> (status: Int, json: String)
    /// `GET /clips`, `GET /snapshots` (`kind`): what the run keeps, newest first, filtered by the
    /// query (source, event, since, limit); nil when it keeps none of that kind (404).
    func evidenceList(_ kind: String, query: [String: String]) -> (status: Int, json: String)?
    /// `GET /clips/NAME`, `GET /snapshots/NAME`: one of the files the run made, opened; nil when there is none of that name.
    func evidenceFile(_ kind: String, name: String) -> ServedFile?
    /// `GET /history`: the events the run keeps (`--events-db`) that the query picks (200), or why
    /// the query cannot be (400); nil when it keeps none (404).
    func history(query: [String: String]) -> (status: Int, json: String)?
    /// `GET /fleet`: the site this node is in (`--fleet`), every input with its node, as the node
    /// sees it; nil when it is in none (404).
    func fleet() -> (status: Int, json: String)?
}

extension LiveViewService {
    public func evidenceList(_ kind: String, query: [String: String]) -> (status: Int, json: String)? { nil }
    public func evidenceFile(_ kind: String, name: String) -> ServedFile? { nil }
    public func history(query: [String: String]) -> (status: Int, json: String)? { nil }
    public func fleet() -> (status: Int, json: String)? { nil }
    public func command(_ name: String, target: String?, body: [UInt8]) -> (status: Int, json: String) {
        (404, #"{"error":"this server changes no inputs"}"#)
    }
}

/// An HTTP response with a whole body.
struct HTTPReply: Sendable {
    var status: Int
    var contentType: String
    var body: [UInt8]
    var headers: [(String, String)] = []

    static func json(_ status: Int, _ text: String) -> HTTPReply {
        HTTPReply(status: status, contentType: "application/json", body: Array((text + "\n").utf8))
    }

    /// An error as `{"error":"..."}`.
    static func error(_ status: Int, _ message: String) -> HTTPReply {
        var o = JSONObject()
        o.set("error", message)
        return .json(status, String(decoding: o.finished(), as: UTF8.self))
    }
}
