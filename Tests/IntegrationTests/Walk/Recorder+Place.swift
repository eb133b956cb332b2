import Foundation

extension Recorder {
    /// Moves each recorder back to the source it records. The sound server moves recording
    /// streams to the new default source when the default sink changes (with null sinks only,
    /// the default source is the default sink's monitor), even one started on a named source:
    /// the walk's recorder of the bridge's sink then recorded the rig's, and the bridge playing
    /// there was "not heard".
    static func keepInPlace(_ recorders: [Recorder], env: [String: String]) throws {
        func json(_ args: [String]) throws -> [[String: Any]] {
            let r = try runCommand(["pactl", "--format=json"] + args, env: env)
            guard r.status == 0 else { throw Rig.RigError(message: "pactl \(args.joined(separator: " ")): \(r.err)") }
            return try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [[String: Any]] ?? []
        }
        var names: [Int: String] = [:]
        for s in try json(["list", "sources", "short"]) {
            if let i = s["index"] as? Int, let n = s["name"] as? String { names[i] = n }
        }
        for o in try json(["list", "source-outputs"]) {
            guard let index = o["index"] as? Int, let on = o["source"] as? Int,
                  let pid = (o["properties"] as? [String: Any])?["application.process.id"] as? String,
                  let r = recorders.first(where: { String($0.pid) == pid }),
                  names[on] != r.source, names.values.contains(r.source) else { continue }
            _ = try runCommand(["pactl", "move-source-output", String(index), r.source], env: env)
            print("walk: the recorder of \(r.source), moved to \(names[on] ?? "?") by the default sink's change, moved back")
        }
    }
}
