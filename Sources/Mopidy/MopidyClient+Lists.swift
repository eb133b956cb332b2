/// Mopidy's tracklist and playlists, for the TrackList and Playlists interfaces.
extension MopidyClient {
    /// The tracklist from the track before the current one on (`count` tracks at most): what
    /// TrackList publishes, with the track still heard while a change is held back. From the
    /// start when nothing is current.
    public func tracklistAroundCurrent(count: Int) throws(MopidyError) -> [TlTrack] {
        let index = try call("core.tracklist.index").int ?? 0
        let start = max(0, index - 1)
        let r = try call("core.tracklist.slice", ["start": .number(Double(start)),
                                                   "end": .number(Double(start + max(0, count)))])
        return (r.array ?? []).compactMap(TlTrack.init(json:))
    }

    /// Every playlist's URI and name, in Mopidy's own order.
    public func playlists() throws(MopidyError) -> [(uri: String, name: String)] {
        (try call("core.playlists.as_list").array ?? []).compactMap { ref in
            guard let uri = ref["uri"]?.string else { return nil }
            return (uri, ref["name"]?.string ?? uri)
        }
    }

    /// The URIs of a playlist's items, in order.
    public func playlistItems(uri: String) throws(MopidyError) -> [String] {
        (try call("core.playlists.get_items", ["uri": .string(uri)]).array ?? []).compactMap { $0["uri"]?.string }
    }

    /// Adds URIs at `position` in the tracklist (nil: at the end) and returns the new tl_tracks
    /// (the first `MopidyLimits.listElements` of them).
    public func add(uris: [String], at position: Int? = nil) throws(MopidyError) -> [TlTrack] {
        var params: [String: JSON] = ["uris": .array(uris.map(JSON.string))]
        if let position { params["at_position"] = .number(Double(max(0, position))) }
        return (try call("core.tracklist.add", params).array ?? []).compactMap(TlTrack.init(json:))
    }

    /// The position of a track in the tracklist, or nil when it is not there.
    public func index(tlid: Int) throws(MopidyError) -> Int? {
        try call("core.tracklist.index", ["tlid": .number(Double(tlid))]).int
    }

    public func remove(tlid: Int) throws(MopidyError) {
        try call("core.tracklist.remove", ["criteria": .object(["tlid": .array([.number(Double(tlid))])])])
    }

    public func clearTracklist() throws(MopidyError) { try call("core.tracklist.clear") }
}
