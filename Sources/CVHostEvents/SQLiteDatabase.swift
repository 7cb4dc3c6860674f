import CSQLite

/// One connection to a SQLite file, through SQLite's C API: statements prepared, values bound
/// and read back, every failure an error with SQLite's own words. Not thread-safe: its owner
/// serialises its use (the event store's lock).
final class SQLiteDatabase {
    struct Failure: Error, CustomStringConvertible {
        /// SQLite's primary result code (SQLITE_CORRUPT, SQLITE_NOTADB, SQLITE_BUSY, ...).
        let code: Int32
        let description: String

        /// The file is not a database, or a damaged one.
        var isDamage: Bool { code == SQLITE_CORRUPT || code == SQLITE_NOTADB }
    }

    /// A value to bind or read back.
    enum Value: Equatable {
        case null
        case integer(Int64)
        case real(Double)
        case text(String)

        var text: String? { if case .text(let s) = self { s } else { nil } }
        var integer: Int64? { if case .integer(let i) = self { i } else { nil } }
        var real: Double? {
            switch self {
            case .real(let d): d
            case .integer(let i): Double(i)
            default: nil
            }
        }
    }

    private let db: OpaquePointer
    let path: String
    private var closed = false

    /// Opens (or makes) the file, read-write. `busyMilliseconds`: how long a statement waits for
    /// another connection's lock before it fails with SQLITE_BUSY.
    init(path: String, busyMilliseconds: Int32 = 2000) throws(Failure) {
        var handle: OpaquePointer?
        let rc = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil)
        guard rc == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
            sqlite3_close(handle)
            throw Failure(code: rc & 0xff, description: message)
        }
        db = handle
        self.path = path
        sqlite3_busy_timeout(db, busyMilliseconds)
        sqlite3_extended_result_codes(db, 0)
    }

    deinit { close() }

    /// Closes the connection (once); nothing may use it after.
    func close() {
        guard !closed else { return }
        closed = true
        sqlite3_close(db)
    }

    private func failure(_ rc: Int32) -> Failure {
        Failure(code: rc & 0xff, description: String(cString: sqlite3_errmsg(db)))
    }

    /// Runs statements that return nothing (a schema, a pragma that sets).
    func execute(_ sql: String) throws(Failure) {
        let rc = sqlite3_exec(db, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw failure(rc) }
    }

    /// Runs one statement with `values` bound to its `?`s. - Returns: its rows, each a column's values.
    @discardableResult
    func query(_ sql: String, _ values: [Value] = []) throws(Failure) -> [[Value]] {
        var statement: OpaquePointer?
        var rc = sqlite3_prepare_v2(db, sql, -1, &statement, nil)
        guard rc == SQLITE_OK, let statement else { throw failure(rc) }
        defer { sqlite3_finalize(statement) }
        for (i, value) in values.enumerated() {
            let at = Int32(i + 1)
            switch value {
            case .null: rc = sqlite3_bind_null(statement, at)
            case .integer(let n): rc = sqlite3_bind_int64(statement, at, n)
            case .real(let d): rc = sqlite3_bind_double(statement, at, d)
            // SQLITE_TRANSIENT: SQLite copies the text before this returns.
            case .text(let s): rc = sqlite3_bind_text(statement, at, s, -1, unsafeBitCast(-1, to: sqlite3_destructor_type.self))
            }
            guard rc == SQLITE_OK else { throw failure(rc) }
        }
        var rows: [[Value]] = []
        while true {
            rc = sqlite3_step(statement)
            if rc == SQLITE_DONE { return rows }
            guard rc == SQLITE_ROW else { throw failure(rc) }
            rows.append((0..<sqlite3_column_count(statement)).map { c in
                switch sqlite3_column_type(statement, c) {
                case SQLITE_INTEGER: .integer(sqlite3_column_int64(statement, c))
                case SQLITE_FLOAT: .real(sqlite3_column_double(statement, c))
                case SQLITE_TEXT: .text(sqlite3_column_text(statement, c).map { String(cString: $0) } ?? "")
                default: .null
                }
            })
        }
    }

    /// The changes of `body` in one transaction: all or none.
    func transaction(_ body: () throws(Failure) -> Void) throws(Failure) {
        try execute("BEGIN IMMEDIATE")
        do {
            try body()
            try execute("COMMIT")
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// The row id of the last row inserted.
    var lastInsertedRow: Int64 { sqlite3_last_insert_rowid(db) }
}
