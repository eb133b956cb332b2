/// Configuration keys on the command line: `--stream-url URL` or `--stream-url=URL`; a boolean
/// alone means true (`--notify`), and takes `true|false` after `=` or as the next argument
/// (`--notify=false`, `--autoplay false`), so a flag can turn a file's `true` off. The values are
/// checked by the keys' own rules when they are applied (`Config.set`), as the file's are.
public enum ConfigFlags {
    /// The words a boolean key takes (`ValueRule.bool`).
    static let booleanWords: Set<String> = ["true", "yes", "on", "1", "false", "no", "off", "0"]

    /// The key `argv[index]` names and its value, and the index after what it used; nil when
    /// `argv[index]` names no key. Throws for the password (never on the command line) and for a
    /// key that needs a value and has none.
    public static func read(_ argv: [String], at index: Int) throws(ConfigError) -> (key: ConfigKey, value: String, next: Int)? {
        let a = argv[index]
        let inline = a.firstIndex(of: "=")
        let flag = inline.map { String(a[..<$0]) } ?? a
        guard let key = ConfigKey.all.first(where: { $0.flag == flag }) else { return nil }
        if key.form == .secret {
            throw ConfigError("the password is never taken on the command line (other users can read it there); "
                              + "use GROOVE_PASSWORD, password_command or the configuration file")
        }
        if let inline { return (key, String(a[a.index(after: inline)...]), index + 1) }
        let following = index + 1 < argv.count ? argv[index + 1] : nil
        switch key.form {
        case .switchesOn:
            guard let word = following, booleanWords.contains(word.lowercased()) else { return (key, "true", index + 1) }
            return (key, word, index + 2)
        case .takesValue, .secret:
            guard let value = following else { throw ConfigError("\(flag) needs a value; see --help") }
            return (key, value, index + 2)
        }
    }
}
