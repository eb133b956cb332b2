import DBus

/// The TrackList and Playlists signals that describe a change of what is published, from the old
/// and new values alone.
public enum ListSignals {
    /// TrackList: the whole list is replaced when nothing of it stays, or when what stays is in
    /// another order; otherwise each removed track, each added one (after its predecessor, or the
    /// NoTrack id at the start) and each changed one's metadata, in that order.
    /// `current`: the current track's id (the NoTrack id when there is none).
    public static func trackList(from old: [TrackMetadata], to new: [TrackMetadata], current: ObjectPath)
        -> [(member: String, args: [DBusValue])] {
        let oldIDs = old.map(\.trackID), newIDs = new.map(\.trackID)
        guard old != new else { return [] }
        let kept = Set(oldIDs).intersection(newIDs)
        let keptInOld = oldIDs.filter(kept.contains), keptInNew = newIDs.filter(kept.contains)
        if kept.isEmpty || keptInOld != keptInNew {
            return [("TrackListReplaced", [.array(element: "o", newIDs.map(DBusValue.objectPath)), .objectPath(current)])]
        }
        var out: [(String, [DBusValue])] = []
        for id in oldIDs where !kept.contains(id) { out.append(("TrackRemoved", [.objectPath(id)])) }
        for (i, t) in new.enumerated() where !kept.contains(t.trackID) {
            let after = i == 0 ? TrackMetadata.noTrackID : new[i - 1].trackID
            out.append(("TrackAdded", [t.dbusValue, .objectPath(after)]))
        }
        let before = Dictionary(old.map { ($0.trackID, $0) }, uniquingKeysWith: { a, _ in a })
        for t in new where kept.contains(t.trackID) && before[t.trackID] != t {
            out.append(("TrackMetadataChanged", [.objectPath(t.trackID), t.dbusValue]))
        }
        return out
    }

    /// Playlists: PlaylistChanged for each playlist still there under another name.
    public static func playlists(from old: [PlaylistInfo], to new: [PlaylistInfo]) -> [(member: String, args: [DBusValue])] {
        let names = Dictionary(old.map { ($0.uri, $0.name) }, uniquingKeysWith: { a, _ in a })
        return new.filter { p in names[p.uri].map { $0 != p.name } ?? false }.map { ("PlaylistChanged", [$0.dbusValue]) }
    }
}
