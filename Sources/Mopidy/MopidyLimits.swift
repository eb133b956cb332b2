/// How much the bridge takes from Mopidy at once, chosen from what Mopidy sends.
public enum MopidyLimits {
    /// One JSON-RPC reply or WebSocket message, bytes. The largest the bridge asks for is
    /// `core.tracklist.add`'s reply to OpenUri, which lists every track added, like
    /// `get_tl_tracks`: for 5 000 tracks Mopidy 3.4 sent 3.16 MB (the rig's tags, ~630 bytes a
    /// track). Twice that and more covers richer tags (MusicBrainz ids, comments). Events are
    /// smaller but for `playlist_changed`, which carries a whole playlist the same way.
    public static let messageBytes = 8 << 20
    /// The parsed tree of one message, bytes (`JSON.parse`'s estimate). A tree takes 4× to 23×
    /// its text; with lists cut to `listElements`, a real reply or event stays far below this,
    /// and a hostile one is refused before it takes more.
    public static let treeBytes = 4 << 20
    /// Elements built of any one list: the bridge reads at most the first tracks of a tracklist
    /// reply, a track's artists, the URI schemes and the images. 256 tracks of the rig's take
    /// about 0.7 MB parsed.
    public static let listElements = 256
}
