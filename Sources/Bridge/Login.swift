import Audio
import Mopidy
import Net
import Support

/// What `groove-bridge login` checks against the server, storing nothing unless both pass: the stream
/// takes the user and password (200 and FLAC audio, not 401), and Mopidy answers
/// `core.get_version`. Each failure says exactly what failed, where, and what to do. Blocking.
public enum LoginCheck {
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public let message: String
        /// The server refused the password (so asking again may help).
        public let refused: Bool
        public var description: String { message }
    }

    /// The stream at `url` with these credentials: which kind of FLAC it serves, or why not.
    public static func stream(url: String, user: String, password: String) -> Result<StreamSniffer.Kind, Failure> {
        let head = StreamHead()
        var options = StreamingGet.Options(user: user, password: password)
        // Icecast sends the first bytes at once on an Ogg mount; a native FLAC mount may wait
        // for the encoder's next frame, a second or two.
        options.stallSeconds = 10
        let end = StreamingGet().perform(url: url, options: options, delegate: head)
        let shown = redactedURL(url)
        switch end {
        case .httpStatus(let code) where FailureReason.Kind(httpStatus: code) != .other:
            return .failure(Failure(message: "the stream at \(shown) refused the password for user '\(user)' (HTTP \(code))",
                                    refused: true))
        case .httpStatus(404):
            return .failure(Failure(message: "there is no stream at \(shown) (HTTP 404): check the host or stream_url", refused: false))
        case .httpStatus(let code):
            return .failure(Failure(message: "the stream at \(shown) answered HTTP \(code)", refused: false))
        case .failed(let why), .untrusted(let why):
            return .failure(Failure(message: "cannot reach the stream: \(why)", refused: false))
        case .stalled(let s):
            return .failure(Failure(message: "the stream at \(shown) sent nothing for \(s) s", refused: false))
        case .finished, .stoppedByConsumer:
            switch StreamSniffer.classify(head.bytes, contentType: head.contentType, url: shown) {
            case .success(let kind): return .success(kind)
            case .failure(let e): return .failure(Failure(message: e.description, refused: false))
            }
        }
    }

    /// The first of `layouts` whose Mopidy answers `core.get_version`, with the version.
    public static func mopidy(_ layouts: [MopidyEndpoints]) -> Result<(MopidyEndpoints, String), Failure> {
        var errors: [FailureReason] = []
        for layout in layouts {
            do throws(MopidyError) {
                let version = try MopidyClient(endpoints: layout).version()
                return .success((layout, version))
            } catch {
                errors.append(error.reason)
            }
        }
        return .failure(Failure(message: errors.map(\.message).joined(separator: "; "),
                                refused: errors.contains(where: \.isUnauthorized)))
    }
}

/// Keeps the status, type and first bytes of a stream, then stops it.
private final class StreamHead: StreamingGetDelegate {
    var status = 0
    var contentType: String?
    var bytes: [UInt8] = []

    func streamResponse(status: Int, contentType: String?) -> Bool {
        self.status = status
        self.contentType = contentType
        return true
    }

    func streamData(_ chunk: UnsafeRawBufferPointer) -> Bool {
        bytes += chunk.prefix(StreamSniffer.wantedBytes - bytes.count)
        return bytes.count < StreamSniffer.wantedBytes
    }

    func streamShouldAbort() -> Bool { false }
}
