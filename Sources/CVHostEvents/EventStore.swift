import CSQLite
import CVHostCore
import CVHostLines
import Foundation
import Glibc

/// The events a user looks back at ("every crossing of the door yesterday between 8 and 9, with its
/// snapshot and clip"), in a SQLite file: one row an event (`StoredEvent.kept`), with its input,
/// rule, label, track, time, its snapshot and the clip that holds it, and the line itself. WAL, so
/// that a reader (`sqlite3 FILE`, a dashboard) never waits on cvhost nor cvhost on it.
///
/// The evidence owns the files; the store indexes them: a row whose files the evidence's budget
/// deleted keeps its row, and a query says the files are gone. Rows older than `maxAgeSeconds` go.
///
/// One run a file (an flock on it, beside SQLite's own locks; a second run is told whose it is). A
/// file that is not a database, or a damaged one, is set aside (renamed `FILE.damaged-UNIX`) and
/// begun anew: said, never a crash, never a run lost for it.
public final class EventStore: @unchecked Sendable {
    // @unchecked Sendable: its connection is used with `connection`'s lock held only.
    public let path: String
    public let maxAgeSeconds: Double
    private let connection: Locked<SQLiteDatabase>
    private let holder: Int32

    /// The format this cvhost writes (`PRAGMA user_version`); a newer file is refused, not changed.
    static let format: Int64 = 1

    public struct OpenError: Error, CustomStringConvertible {
        public let description: String
    }

    /// Opens (or makes) the store. - Parameter said: what was found and done on the way (a
    /// damaged file set aside), for stderr. - Throws: a one-line reason (another run's, a file
    /// that is no regular file, a newer format, a folder that cannot be written).
    public init(path: String, maxAgeSeconds: Double = 30 * 86_400, said: (String) -> Void = { _ in }) throws(OpenError) {
        self.path = path
        self.maxAgeSeconds = maxAgeSeconds
        var fd = try Self.take(path)
        var opened: SQLiteDatabase
        do throws(SQLiteDatabase.Failure) {
            opened = try Self.openChecked(path)
        } catch {
            guard error.isDamage else {
                close(fd)
                throw OpenError(description: "the event store \(path) cannot be opened: \(error.description)")
            }
            // Set aside: the damaged file (and its WAL) keep their bytes for whoever wants them.
            let aside = "\(path).damaged-\(Int(Date().timeIntervalSince1970))"
            for suffix in ["", "-wal", "-shm"] { rename(path + suffix, aside + suffix) }
            close(fd)
            said("the event store \(path) was damaged (\(error.description)): set aside as \(aside), a new one begun")
            fd = try Self.take(path)
            do throws(SQLiteDatabase.Failure) {
                opened = try Self.openChecked(path)
            } catch {
                close(fd)
                throw OpenError(description: "the event store \(path) cannot be made: \(error.description)")
            }
        }
        connection = Locked(opened)
        holder = fd
        let db = opened
        do throws(SQLiteDatabase.Failure) {
            let version = try db.query("PRAGMA user_version").first?.first?.integer ?? 0
            guard version <= Self.format else {
                throw SQLiteDatabase.Failure(code: SQLITE_ERROR, description: "it was written by a newer cvhost (format \(version); this one writes \(Self.format))")
            }
            try db.execute("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL")
            try db.execute("""
                CREATE TABLE IF NOT EXISTS events (
                    id INTEGER PRIMARY KEY,
                    event_id TEXT NOT NULL UNIQUE,
                    event TEXT NOT NULL,
                    ts REAL NOT NULL,
                    source TEXT, plugin TEXT, line TEXT, zone TEXT, label TEXT, track INTEGER, direction TEXT,
                    snapshot TEXT, snapshot_file TEXT,
                    clip TEXT, clip_file TEXT, clip_start REAL,
                    json TEXT NOT NULL);
                CREATE INDEX IF NOT EXISTS events_ts ON events(ts);
                CREATE INDEX IF NOT EXISTS events_source ON events(source, id);
                CREATE INDEX IF NOT EXISTS events_snapshot ON events(snapshot_file);
                CREATE INDEX IF NOT EXISTS events_clip ON events(clip_file);
                CREATE TABLE IF NOT EXISTS holder (pid INTEGER);
                PRAGMA user_version = \(Self.format);
                """)
            try db.transaction { () throws(SQLiteDatabase.Failure) in
                try db.query("DELETE FROM holder")
                try db.query("INSERT INTO holder (pid) VALUES (?)", [.integer(Int64(getpid()))])
            }
        } catch {
            // (Every property is set: deinit runs, and closes the file.)
            throw OpenError(description: "the event store \(path) cannot be used: \(error.description)")
        }
        _ = prune()
    }

    deinit {
        // SQLite's connection first: closing our descriptor of the file would drop its POSIX locks.
        connection.withLock { db in
            _ = try? db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            db.close()
        }
        close(holder)
    }

    /// The file opened and locked for this run: a regular file (made 0600 when missing), never
    /// through a symbolic link, not another run's.
    private static func take(_ path: String) throws(OpenError) -> Int32 {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o600)
        guard fd >= 0 else {
            throw OpenError(description: "the event store \(path) cannot be opened: \(Errno.current) (give --events-db a file in a folder this user can write)")
        }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            throw OpenError(description: "the event store \(path) is not a regular file: give --events-db a file's path")
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let pid = (try? SQLiteDatabase(path: path, busyMilliseconds: 200).query("SELECT pid FROM holder").first?.first?.integer) ?? nil
            close(fd)
            throw OpenError(description: "the event store \(path) is another cvhost run's\(pid.map { " (pid \($0))" } ?? ""): give this run its own --events-db")
        }
        return fd
    }

    /// Opened, and its pages read through once (a damaged file says so here, not mid-run).
    private static func openChecked(_ path: String) throws(SQLiteDatabase.Failure) -> SQLiteDatabase {
        let db = try SQLiteDatabase(path: path)
        let check = try db.query("PRAGMA quick_check").first?.first?.text ?? "ok"
        guard check == "ok" else { throw SQLiteDatabase.Failure(code: SQLITE_CORRUPT, description: check) }
        return db
    }

    /// Keeps the events among `lines` (those `StoredEvent.kept`), in one transaction; a clip.saved
    /// names its clip in the rows of the events it holds. - Returns: how many rows were added.
    @discardableResult
    public func record(_ lines: [OutputLine]) throws -> Int {
        let events = lines.compactMap(StoredEvent.init)
        guard !events.isEmpty else { return 0 }
        var added = 0
        try connection.withLock { db throws(SQLiteDatabase.Failure) in
            try db.transaction { () throws(SQLiteDatabase.Failure) in
                for e in events {
                    try db.query("""
                        INSERT OR IGNORE INTO events (event_id, event, ts, source, plugin, line, zone, label, track, direction,
                                                      snapshot, snapshot_file, clip, clip_file, clip_start, json)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """, [.text(e.eventID), .text(e.event), .real(e.ts), Self.value(e.source), Self.value(e.plugin), Self.value(e.line),
                              Self.value(e.zone), Self.value(e.label), e.track.map { .integer($0) } ?? .null, Self.value(e.direction),
                              Self.value(e.snapshot), Self.value(e.snapshot.map(Self.fileName)), Self.value(e.clip),
                              Self.value(e.clip.map(Self.fileName)), e.clipStart.map { .real($0) } ?? .null, .text(e.json)])
                    added += 1
                    guard let clip = e.clip else { continue }
                    for held in e.clipEvents {
                        try db.query("UPDATE events SET clip = ?, clip_file = ?, clip_start = ? WHERE event_id = ?",
                                     [.text(clip), .text(Self.fileName(clip)), e.clipStart.map { .real($0) } ?? .null, .text(held)])
                    }
                }
            }
        }
        return added
    }

    /// Rows older than `maxAgeSeconds` deleted. - Returns: how many.
    @discardableResult
    public func prune(nowSeconds: Double = Date().timeIntervalSince1970) -> Int {
        connection.withLock { db in
            (try? db.query("DELETE FROM events WHERE ts < ? RETURNING id", [.real(nowSeconds - maxAgeSeconds)]).count) ?? 0
        }
    }

    /// `GET /history`: the events the query picks, newest first, each with its line and its files
    /// (whether they are still there; their URLs under `urlBase`, the live view's address).
    public func answer(_ q: EventQuery, urlBase: String? = nil) throws -> String {
        var conditions: [String] = []
        var values: [SQLiteDatabase.Value] = []
        for (column, value) in [("source", q.source), ("event", q.event), ("line", q.line), ("zone", q.zone), ("label", q.label)] {
            if let value {
                conditions.append("\(column) = ?")
                values.append(.text(value))
            }
        }
        if let t = q.track { conditions.append("track = ?"); values.append(.integer(t)) }
        if let s = q.since { conditions.append("ts >= ?"); values.append(.real(s)) }
        if let u = q.until { conditions.append("ts < ?"); values.append(.real(u)) }
        if let b = q.before { conditions.append("id < ?"); values.append(.integer(b)) }
        values.append(.integer(Int64(q.limit + 1)))
        let sql = "SELECT id, json, ts, snapshot, clip, clip_start FROM events"
            + (conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")) + " ORDER BY id DESC LIMIT ?"
        let rows = try connection.withLock { db throws(SQLiteDatabase.Failure) in try db.query(sql, values) }
        let base = urlBase.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
        var o = JSONObject()
        o.set("events", array: rows.prefix(q.limit).map { row in
            var j = JSONObject()
            j.set("id", row[0].integer)
            j.set("line", validatedJSON: Array((row[1].text ?? "null").utf8))
            if let path = row[3].text {
                var s = JSONObject()
                s.set("path", path)
                s.set("exists", FileManager.default.fileExists(atPath: path))
                if let base { s.set("url", "\(base)/snapshots/\(Self.fileName(path))") }
                j.set("snapshot", object: s)
            }
            if let path = row[4].text {
                var c = JSONObject()
                c.set("path", path)
                c.set("exists", FileManager.default.fileExists(atPath: path))
                if let base { c.set("url", "\(base)/clips/\(Self.fileName(path))") }
                // Where in the clip the event is (a player opens it there: URL#t=SECONDS).
                if let start = row[5].real, let ts = row[2].real { c.set("offset", max(0, ts - start), decimals: 3) }
                j.set("clip", object: c)
            }
            return j
        })
        o.set("next_before", rows.count > q.limit ? rows[q.limit - 1][0].integer : nil)
        return String(decoding: o.finished(), as: UTF8.self)
    }

    /// The events that name a snapshot or clip file (`kind`: "snapshots" or "clips"), for the
    /// entries of GET /snapshots and /clips: what each file is the evidence of.
    public func events(ofFile name: String, kind: String) -> [JSONObject] {
        let column = kind == "clips" ? "clip_file" : "snapshot_file"
        let rows = connection.withLock { db in
            (try? db.query("SELECT event_id, event, ts, line, zone, label, track, direction FROM events WHERE \(column) = ? AND event != 'clip.saved' ORDER BY id LIMIT 100",
                           [.text(name)])) ?? []
        }
        return rows.map { r in
            var j = JSONObject()
            j.set("event_id", r[0].text)
            j.set("event", r[1].text)
            j.set("ts", r[2].real, decimals: 6)
            if let line = r[3].text { j.set("line", line) }
            if let zone = r[4].text { j.set("zone", zone) }
            if let label = r[5].text { j.set("label", label) }
            if let track = r[6].integer { j.set("track_id", track) }
            if let direction = r[7].text { j.set("direction", direction) }
            return j
        }
    }

    /// How many rows it holds.
    public var count: Int {
        connection.withLock { db in Int((try? db.query("SELECT count(*) FROM events").first?.first?.integer) ?? 0) }
    }

    private static func value(_ s: String?) -> SQLiteDatabase.Value { s.map { .text($0) } ?? .null }

    static func fileName(_ path: String) -> String { String(path.split(separator: "/").last ?? Substring(path)) }
}
