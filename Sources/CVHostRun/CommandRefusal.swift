/// A command refused (on stdin, over HTTP, in a reload), with the HTTP status that says why:
/// 400 a bad request, 404 no such target, 409 not possible now (a name taken, the input limit),
/// 422 understood but not possible (a URL cvhost cannot open, a plugin the run does not have).
struct CommandRefusal: Error {
    let status: Int
    let message: String

    init(_ status: Int, _ message: String) {
        self.status = status
        self.message = message
    }
}
