import DBus
import Support

/// The desktop's keyring: the freedesktop Secret Service (GNOME Keyring, KWallet) on the session
/// bus, https://specifications.freedesktop.org/secret-service-spec/latest/. The password is the
/// item with the attributes `service = groove-audio`, `user = <user>`: what
/// `secret-tool store --label='Groove Audio' service groove-audio user listener` makes.
///
/// Blocking calls on a client connection of its own, opened for each use and closed after it:
/// used at start, on a reload (the main thread) and by `groove-bridge login`. It never unlocks
/// and never answers a prompt: a locked keyring is said, not asked about again and again.
/// The secret travels in a "plain" session, which the specification allows on the session bus
/// (the user's own, like the process memory the password lives in anyway).
public enum Keyring {
    public static let serviceAttribute = "groove-audio"

    public enum Lookup: Equatable, Sendable {
        case found(String)
        /// An item matches, but the keyring that holds it is locked.
        case locked
        case notFound
        /// No Secret Service answered (none on this desktop, or no session bus), with why.
        case unavailable(String)
    }

    /// What `status` and the log say when the item is locked.
    public static func lockedAdvice(_ user: String) -> String {
        "the keyring holds the password for '\(user)' but is locked: unlock it (log in to the desktop, or open "
            + "Passwords and Keys), then run systemctl --user reload groove-bridge"
    }

    /// The password for `user`. `busAddress` nil: the session bus.
    public static func lookup(user: String, busAddress: String? = nil) -> Lookup {
        do throws(DBusFailure) {
            let s = try SecretSession(busAddress: busAddress)
            let (unlocked, locked) = try s.search(user: user)
            guard let item = unlocked.first else { return locked.isEmpty ? .notFound : .locked }
            let secret = try s.secret(of: item)
            // Text, one line: what a password typed at a prompt or stored by secret-tool is.
            guard let text = String(validating: secret, as: UTF8.self) else {
                return .unavailable("the keyring item for '\(user)' is not text")
            }
            let password = String(text.split(separator: "\n", omittingEmptySubsequences: false).first ?? "")
                .trimmingSuffix("\r")
            guard !password.isEmpty else { return .unavailable("the keyring item for '\(user)' is empty") }
            Log.addSecret(password)
            return .found(password)
        } catch {
            return .unavailable(error.message)
        }
    }

    /// Stores `password` for `user` in the default keyring: the item already there is given the
    /// new secret (and any duplicates removed), else a new item is made.
    public static func store(user: String, password: String, busAddress: String? = nil) throws(DBusFailure) {
        let s = try SecretSession(busAddress: busAddress)
        let (unlocked, locked) = try s.search(user: user)
        guard locked.isEmpty else {
            throw DBusFailure(name: "org.freedesktop.Secret.Error.IsLocked", message: "the keyring is locked")
        }
        let secret = s.secretValue(Array(password.utf8))
        if let first = unlocked.first {
            _ = try s.call(first.rawValue, "org.freedesktop.Secret.Item", "SetSecret", [secret])
            for extra in unlocked.dropFirst() { _ = try s.call(extra.rawValue, "org.freedesktop.Secret.Item", "Delete") }
            return
        }
        let alias = try s.call("/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "ReadAlias", [.string("default")])
        guard let collection = alias.first?.objectPathValue, collection.rawValue != "/" else {
            throw DBusFailure(name: "org.freedesktop.Secret.Error.NoSuchObject", message: "the keyring has no default collection")
        }
        let properties = DBusValue.vardict([
            ("org.freedesktop.Secret.Item.Label", .string("Groove Audio")),
            ("org.freedesktop.Secret.Item.Attributes", SecretSession.attributes(user: user)),
        ])
        let made = try s.call(collection.rawValue, "org.freedesktop.Secret.Collection", "CreateItem",
                              [properties, secret, .bool(true)])
        // A prompt other than "/" means the collection is locked and wants one: not answered.
        if made.count == 2, let prompt = made[1].objectPathValue, prompt.rawValue != "/" {
            throw DBusFailure(name: "org.freedesktop.Secret.Error.IsLocked", message: "the keyring is locked")
        }
    }
}

/// One connection to the Secret Service with a "plain" session open on it.
struct SecretSession {
    static let service = "org.freedesktop.secrets"
    let bus: DBusConnection
    let session: ObjectPath

    init(busAddress: String?) throws(DBusFailure) {
        bus = try DBusConnection(address: busAddress)
        let reply = try bus.call(destination: Self.service, path: "/org/freedesktop/secrets",
                                 interface: "org.freedesktop.Secret.Service", member: "OpenSession",
                                 args: [.string("plain"), .variant(.string(""))], timeoutMs: Self.timeoutMs)
        guard reply.count == 2, let path = reply[1].objectPathValue else {
            throw DBusFailure(name: "org.freedesktop.DBus.Error.InvalidSignature", message: "OpenSession answered \(reply.map(\.signature))")
        }
        session = path
    }

    /// A keyring starting by D-Bus activation takes a moment; one that hangs must not hold the
    /// bridge's start or a reload for long.
    static let timeoutMs: Int32 = 5000

    static func attributes(user: String) -> DBusValue {
        .dict(key: "s", value: "s", [(.string("service"), .string(Keyring.serviceAttribute)), (.string("user"), .string(user))])
    }

    func call(_ path: String, _ interface: String, _ member: String, _ args: [DBusValue] = []) throws(DBusFailure) -> [DBusValue] {
        try bus.call(destination: Self.service, path: path, interface: interface, member: member, args: args,
                     timeoutMs: Self.timeoutMs)
    }

    /// The items for `user`: those that can be read as they stand, and those in a locked keyring.
    func search(user: String) throws(DBusFailure) -> (unlocked: [ObjectPath], locked: [ObjectPath]) {
        let reply = try call("/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "SearchItems",
                             [Self.attributes(user: user)])
        guard reply.count == 2, case .array("o", let unlocked) = reply[0], case .array("o", let locked) = reply[1] else {
            throw DBusFailure(name: "org.freedesktop.DBus.Error.InvalidSignature", message: "SearchItems answered \(reply.map(\.signature))")
        }
        return (unlocked.compactMap(\.objectPathValue), locked.compactMap(\.objectPathValue))
    }

    /// The secret's bytes of one item (GetSecrets: `a{o(oayays)}`).
    func secret(of item: ObjectPath) throws(DBusFailure) -> [UInt8] {
        let reply = try call("/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "GetSecrets",
                             [.array(element: "o", [.objectPath(item)]), .objectPath(session)])
        guard case .dict("o", "(oayays)", let entries)? = reply.first,
              let (_, value) = entries.first(where: { $0.0 == .objectPath(item) }),
              case .structure(let fields) = value, fields.count == 4, case .array("y", let bytes) = fields[2] else {
            throw DBusFailure(name: "org.freedesktop.DBus.Error.InvalidSignature", message: "GetSecrets answered \(reply.map(\.signature))")
        }
        return bytes.compactMap { if case .byte(let b) = $0 { return b }; return nil }
    }

    /// A secret for this session (`(oayays)`: session, no parameters in a plain session, value,
    /// content type).
    func secretValue(_ bytes: [UInt8]) -> DBusValue {
        .structure([.objectPath(session), .array(element: "y", []), .array(element: "y", bytes.map(DBusValue.byte)),
                    .string("text/plain; charset=utf8")])
    }
}

extension String {
    func trimmingSuffix(_ suffix: String) -> String { hasSuffix(suffix) ? String(dropLast(suffix.count)) : self }
}

/// Where the password came from, in the order of the search.
public enum PasswordSource: String, Sendable, Equatable {
    case environment = "GROOVE_PASSWORD", command = "password_command", file = "password"
    case keyring
    /// The keyring holds it but is locked: the bridge runs without it and says so.
    case keyringLocked = "keyring (locked)"
    case none
}

extension ConfigLoader {
    /// The last place the password is looked for: one log line for what is found, so a missing
    /// password is never a mystery, and none of them a prompt.
    static func passwordFromKeyring(_ c: inout Config, _ lookup: Keyring.Lookup) {
        switch lookup {
        case .found(let password):
            c.password = password
            c.passwordSource = .keyring
            Log.info("password: from the keyring (service \(Keyring.serviceAttribute), user \(c.user))")
        case .locked:
            c.passwordSource = .keyringLocked
            Log.warning(Keyring.lockedAdvice(c.user))
        case .notFound:
            Log.info("password: none configured and none in the keyring for user \(c.user); run groove-bridge login to store one")
        case .unavailable(let why):
            Log.info("password: none configured, and no keyring to ask (\(why)); run groove-bridge login to store one")
        }
    }
}
