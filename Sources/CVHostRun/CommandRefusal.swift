/// A command refused (on stdin, over HTTP, in a reload): why, in the run's terms, and a one-line
/// message. The HTTP status that says it is chosen at the edge (RunLiveView's `httpStatus`); on
/// stdin the answer is `ok: false` with the message.
package struct CommandRefusal: Error {
    package enum Kind: Sendable, Equatable {
        /// The command itself is wrong: a field missing, of the wrong type, unknown.
        case invalid
        /// Beyond what this client may ask (an input outside --allow-inputs).
        case forbidden
        /// What it names is not there (an input, a plugin, a zone).
        case notFound
        /// Not possible now: a name taken, the input limit, the run ending, being removed already.
        case conflict
        /// Understood but cannot be: a URL cvhost cannot open, a plugin the run does not have.
        case unprocessable
    }

    package let kind: Kind
    package let message: String

    init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }
}
