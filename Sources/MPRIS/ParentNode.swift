import DBus

/// Introspection for the parents of /org/mpris/MediaPlayer2, so tools that walk the tree find it.
final class ParentNode: DBusObject {
    let path: String
    init(path: String) { self.path = path }

    func handle(_ call: MethodCall) -> MethodReply {
        guard call.member == "Introspect", call.interface == nil || call.interface == MPRISInterface.introspectable else {
            return .error(name: MPRISCalls.unknownMethodName, message: "no method \(call.member) on \(path)")
        }
        let child = path == "/" ? "org" : path == "/org" ? "mpris" : "MediaPlayer2"
        return .values([.string("""
            <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
            <node><node name="\(child)"/></node>
            """)])
    }
}
