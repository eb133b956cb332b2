/// The sequences of calls that make one thing a user asks for: Mopidy has no single call for
/// them, so the order they need is kept here, with the client, and tested against the real server
/// (`MopidySequenceTests`). Each call is a request of its own: another client acting in between
/// is seen, not prevented.
extension MopidyClient {
    /// Replaces the tracklist with a playlist's items and plays the first: items, clear, add,
    /// play. Returns the tlids added, in order (none for an empty playlist, which then plays
    /// nothing).
    public func activatePlaylist(uri: String) throws(MopidyError) -> [Int] {
        let items = try playlistItems(uri: uri)
        try clearTracklist()
        let added = try add(uris: items, at: nil)
        if let first = added.first { try play(tlid: first.tlid) }
        return added.map(\.tlid)
    }

    /// Adds a track right after the track `afterTlid` (nil, or a track no longer there: at the
    /// start, as MPRIS's AddTrack says for NoTrack), and plays it when `play`. Returns what was
    /// added.
    @discardableResult
    public func addTrack(uri: String, afterTlid: Int?, play: Bool) throws(MopidyError) -> TlTrack {
        let position = try afterTlid.flatMap { tlid throws(MopidyError) in try index(tlid: tlid).map { $0 + 1 } } ?? 0
        let added = try addedOne(try add(uris: [uri], at: position), uri)
        if play { try self.play(tlid: added.tlid) }
        return added
    }

    /// Adds a URI at the end of the tracklist and plays it (MPRIS's OpenUri). Returns what was
    /// added.
    @discardableResult
    public func open(uri: String) throws(MopidyError) -> TlTrack {
        let added = try addedOne(try add(uris: [uri]), uri)
        try play(tlid: added.tlid)
        return added
    }

    /// The one track an add of one URI made: Mopidy answers an empty list for a URI no backend
    /// knows, which is an error to the user who asked for it.
    private func addedOne(_ added: [TlTrack], _ uri: String) throws(MopidyError) -> TlTrack {
        guard let first = added.first else {
            throw MopidyError.badReply(url: endpoints.rpcURL, reason: "Mopidy added nothing for \(uri)")
        }
        return first
    }
}
