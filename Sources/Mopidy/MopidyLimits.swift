/// How much the bridge takes from Mopidy at once, chosen from what Mopidy sends.
///
/// Measured on the rig (Mopidy 3.4, Mopidy-Local): `core.tracklist.get_tl_tracks` of 5 000
/// tracks is 3.16 MB, ~630 bytes a track, and `tracklist.add`'s reply for them the same. What one
/// message costs at most is its text, once more as a String for an event, and its parsed tree
/// (`treeBytes`, 2.3 times that at worst): 6 MiB + 1 MiB + 1 MiB + 2.3 MB, about 11 MB with a
/// reply and an event at once, which keeps the bridge under 40 MB whatever the server sends.
/// Mopidy 4 writes every field (`null` when unset): the same tracks take ~770 bytes each, 5 000
/// of them 3.8 MB (`MopidyFourShapeTests`), within `replyBytes` still.
public enum MopidyLimits {
    /// One JSON-RPC reply, bytes. The largest the bridge asks for is `core.tracklist.add`'s
    /// reply to OpenUri, which lists every track added: 5 000 of the rig's tracks take half of
    /// it, leaving room for richer tags (MusicBrainz ids, comments).
    public static let replyBytes = 6 << 20
    /// One event the bridge reads, bytes. The events it uses are a track or a number (a
    /// track_playback_started is ~1 KB); only `playlist_changed`, which carries a whole playlist
    /// and which the bridge does not use, is larger: 1 MiB holds one of ~1 600 tracks.
    public static let eventBytes = 1 << 20
    /// An event over `eventBytes` up to this is read past (its bytes dropped as they arrive,
    /// one log line) and the socket kept: a playlist of ~50 000 tracks. Beyond, the server is not
    /// sending Mopidy events, and the connection is dropped.
    public static let skippedEventBytes = 32 << 20
    /// The parsed tree of one message, bytes (`JSON.parse`'s estimate). A tree takes 4× to 23×
    /// its text; with lists cut to `listElements` a real reply or event takes a few hundred KB.
    public static let treeBytes = 1 << 20
    /// Elements built of any one list: the bridge reads at most the first track of a tracklist
    /// reply, a track's artists, the URI schemes and the images. 100 of the rig's tracks take
    /// about 0.3 MB parsed.
    public static let listElements = 100
}
