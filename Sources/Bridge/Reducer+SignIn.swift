import Audio
import Net
import Support

/// What refused the password: the stream (Icecast's Basic auth) or Mopidy (a proxy in front of
/// it that asks for one).
public enum PasswordRefuser: String, Sendable, Hashable, CaseIterable { case stream, mopidy }

/// "Sign in again": a refused password is an error only the user can fix, so it is said once per
/// episode as a desktop notification (with `notify = false` too), besides the log and `status`.
/// An episode lasts from the first refusal until what refused accepts again, or until a reload
/// changes the credentials (the user acted: a refusal after that is news again). The stream's
/// slow retries in between refuse again and again, and are not news. A refusal is told by the
/// failure's kind (`FailureReason.Kind.unauthorized`, decided from the HTTP status where the
/// failure is seen), never by its words.
extension BridgeState {
    mutating func followSignIn(_ input: Input, _ fx: inout [Effect]) {
        switch input {
        case .streamStatus(let s, let sequence):
            guard sequence > streamSequence else { return }
            if case .failed(let reason, _) = s, reason.isUnauthorized {
                passwordRefused(by: .stream, &fx)
            } else if s == .playing {
                passwordAccepted(by: .stream)
            }
        case .eventsDisconnected(let reason), .reply(.failed(_, let reason)):
            if reason.isUnauthorized { passwordRefused(by: .mopidy, &fx) }
        case .eventsConnected, .reply(.synced):
            passwordAccepted(by: .mopidy)
        case .reload(let new):
            let same = new.user == config.user && new.password == config.password
                && new.passwordSource == config.passwordSource && new.signInAccount == config.signInAccount
            if !same {
                refusedBy = []
                signInNeeded = nil
            }
        default:
            break
        }
    }

    mutating func passwordRefused(by who: PasswordRefuser, _ fx: inout [Effect]) {
        let fresh = refusedBy.isEmpty
        refusedBy.insert(who)
        guard fresh else { return }
        let request = SignInRequest(account: config.signInAccount, keyringLocked: config.passwordSource == .keyringLocked)
        signInNeeded = request.sentence
        fx.append(.log(.warning, request.sentence))
        fx.append(.askToSignIn(request))
    }

    mutating func passwordAccepted(by who: PasswordRefuser) {
        guard refusedBy.remove(who) != nil, refusedBy.isEmpty else { return }
        signInNeeded = nil
    }
}

/// What the "sign in again" notification says.
public struct SignInRequest: Equatable, Sendable {
    /// `listener@musicbox.local`
    public var account: String
    /// The password is in a keyring that is locked: unlocking it is the fix, not a new password.
    public var keyringLocked: Bool

    public var summary: String {
        keyringLocked ? "Groove Audio needs the password for \(account) from the locked keyring"
            : "Groove Audio refused the password for \(account)"
    }

    public var body: String {
        keyringLocked ? "unlock the keyring, then run systemctl --user reload groove-bridge"
            : "run groove-bridge login"
    }

    /// For the log and `status`.
    public var sentence: String { "\(summary) — \(body)" }
}

extension Config {
    /// `user@host` as the user knows the server: the configured host, else the stream's, else
    /// Mopidy's.
    public var signInAccount: String {
        let host = self.host ?? [effectiveStreamURL, rpcURL, wsURL].lazy.compactMap { $0.flatMap(URLParts.parse)?.host }.first
        return "\(user)@\(host ?? "the server")"
    }
}
