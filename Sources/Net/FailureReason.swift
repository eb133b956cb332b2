/// Why a connection or a request failed: a kind a decision can read, decided where the failure is
/// seen (an HTTP status, a handshake's status line), and the words for people, built from it.
/// A decision reads `kind`, never `message`: rewording a message changes no behaviour.
public struct FailureReason: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Kind: Equatable, Sendable {
        /// The server refused the credentials: HTTP 401 or 403.
        case unauthorized(httpStatus: Int)
        /// Anything else: the network, a timeout, another status, a malformed answer.
        case other

        /// `.unauthorized` for 401 and 403, else `.other`.
        public init(httpStatus: Int) {
            self = httpStatus == 401 || httpStatus == 403 ? .unauthorized(httpStatus: httpStatus) : .other
        }
    }

    public var kind: Kind
    /// For the log and `status`.
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// A failure that is no refusal.
    public init(_ message: String) { self.init(.other, message) }

    public var description: String { message }

    public var isUnauthorized: Bool {
        if case .unauthorized = kind { return true }
        return false
    }
}
