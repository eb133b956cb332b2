import DBus
import Mopidy
import Support

/// Desktop notifications (org.freedesktop.Notifications) for track changes: one popup per track,
/// each replacing the previous one (`replaces_id`), never one per pause or volume change; and
/// the request to sign in again when the password is refused.
/// Blocking calls on a client connection of its own: use it from one worker thread only.
final class Notifier: @unchecked Sendable {
    private let busAddress: String?
    private var connection: DBusConnection? = nil
    private var lastID: UInt32 = 0
    private var lastURI: String? = nil

    init(busAddress: String?) { self.busAddress = busAddress }

    func trackChanged(_ track: Track, artURI: String?) {
        guard track.uri != lastURI else { return }
        lastURI = track.uri
        do throws(DBusFailure) {
            if connection == nil { connection = try DBusConnection(address: busAddress) }
            let body = [track.artists.joined(separator: ", "), track.album ?? ""].filter { !$0.isEmpty }.joined(separator: " — ")
            let reply = try connection!.call(
                destination: "org.freedesktop.Notifications", path: "/org/freedesktop/Notifications",
                interface: "org.freedesktop.Notifications", member: "Notify",
                args: [.string("Groove Audio"), .uint32(lastID), .string(artURI ?? "groove-bridge"),
                       .string(track.name ?? track.uri), .string(escapeMarkup(body)),
                       .strings([]),
                       .vardict([("desktop-entry", .string("groove-bridge")), ("category", .string("x-gnome.music")),
                                 ("transient", .bool(true))]),
                       .int32(-1)],
                timeoutMs: 2000)
            if case .uint32(let id)? = reply.first { lastID = id }
        } catch {
            Log.warning("notification not shown: \(error.message)")
            connection = nil
        }
    }

    /// A refused password: an error the user must act on, so it is shown whatever `notify`
    /// says, stays until dismissed (critical urgency) and never replaces a track's popup.
    func askToSignIn(_ request: SignInRequest) {
        do throws(DBusFailure) {
            if connection == nil { connection = try DBusConnection(address: busAddress) }
            _ = try connection!.call(
                destination: "org.freedesktop.Notifications", path: "/org/freedesktop/Notifications",
                interface: "org.freedesktop.Notifications", member: "Notify",
                args: [.string("Groove Audio"), .uint32(0), .string("dialog-password"),
                       .string(request.summary), .string(escapeMarkup(request.body)), .strings([]),
                       .vardict([("desktop-entry", .string("groove-bridge")), ("urgency", .byte(2))]),
                       .int32(-1)],
                timeoutMs: 2000)
        } catch {
            Log.warning("sign-in notification not shown: \(error.message)")
            connection = nil
        }
    }

    /// The body may carry markup; artist names must not.
    private func escapeMarkup(_ s: String) -> String {
        var out = ""
        for c in s {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            default: out.append(c)
            }
        }
        return out
    }
}
