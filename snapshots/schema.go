package snapshots

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// File kinds recorded in the meta table.
const (
	kindSnapshot = "snapshot"
	kindRun      = "run"
)

// busyTimeout is how long a connection waits for a lock held by another
// connection (a writer committing, a checkpoint) before giving up.
const busyTimeout = 10 * time.Second

// metaDDL is shared by snapshots and run files: the first table we create,
// the one Open checks before anything else.
const metaDDL = `CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`

// snapshotDDL creates version 1 of the snapshot schema.
var snapshotDDL = []string{
	metaDDL,
	`CREATE TABLE exchanges (
		id                 INTEGER PRIMARY KEY,
		direction          TEXT NOT NULL,
		protocol           TEXT NOT NULL,
		service            TEXT NOT NULL,
		start_ns           INTEGER NOT NULL,
		duration_ns        INTEGER NOT NULL,
		method             TEXT NOT NULL,
		url                TEXT NOT NULL,
		proto              TEXT NOT NULL,
		request_header     TEXT,
		request_body       BLOB,
		request_body_size  INTEGER NOT NULL,
		status             INTEGER NOT NULL,
		response_header    TEXT,
		response_body      BLOB,
		response_body_size INTEGER NOT NULL,
		endpoint           TEXT NOT NULL,
		parent_id          INTEGER NOT NULL,
		trace_id           TEXT NOT NULL,
		error              TEXT NOT NULL
	)`,
	`CREATE TABLE statements (
		id          INTEGER PRIMARY KEY,
		exchange_id INTEGER NOT NULL,
		trace_id    TEXT NOT NULL,
		conn        INTEGER NOT NULL,
		start_ns    INTEGER NOT NULL,
		duration_ns INTEGER NOT NULL,
		protocol    TEXT NOT NULL,
		sql         TEXT NOT NULL,
		fingerprint TEXT NOT NULL,
		rows        INTEGER NOT NULL,
		command_tag TEXT NOT NULL,
		error       TEXT NOT NULL
	)`,
	// capture holds one row per counter of CaptureStats, rewritten with every commit.
	`CREATE TABLE capture (name TEXT PRIMARY KEY, value INTEGER NOT NULL)`,
	// rules lists the user's endpoint rules, in the order they apply.
	`CREATE TABLE rules (position INTEGER PRIMARY KEY, rule TEXT NOT NULL)`,
}

// snapshotV2 takes the snapshot schema from version 1 to 2: an exchange's
// response trailers and the messages of a gRPC call (see messages.go).
// Readers of a version 1 file read both as NULL (Snapshot.sel).
var snapshotV2 = []string{
	`ALTER TABLE exchanges ADD COLUMN response_trailer TEXT`,
	`ALTER TABLE exchanges ADD COLUMN messages BLOB`,
}

// snapshotV3 takes the snapshot schema from version 2 to 3: the client
// connection an inbound request came on (Exchange.ClientConn). Readers of
// an older file read it as NULL (zero: unknown).
var snapshotV3 = []string{
	`ALTER TABLE exchanges ADD COLUMN client_conn INTEGER`,
}

// v2Columns are the columns versions 2 and 3 added, as queries name them.
const v2Columns = `response_trailer, messages, client_conn`

// runDDL creates version 1 of the run file schema.
var runDDL = []string{
	metaDDL,
	`CREATE TABLE run_info (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
	// results holds the results in blocks, each of n results numbered
	// first to last (see runcodec.go).
	`CREATE TABLE results (first INTEGER PRIMARY KEY, last INTEGER NOT NULL, n INTEGER NOT NULL, data BLOB NOT NULL)`,
	// strings interns the strings records refer to by id.
	`CREATE TABLE strings (id INTEGER PRIMARY KEY, value TEXT NOT NULL)`,
	// Added without a version change: older files lack them and read as
	// holding no responses (see responses.go).
	responsesDDL,
	responseHashesDDL,
}

// dsn builds a modernc.org/sqlite data source name for path. Writers use WAL
// with synchronous=NORMAL: a commit survives the process being killed (it is
// in the OS once written), only a power cut can lose the last commits.
func dsn(path string, readOnly bool) string {
	u := url.URL{Scheme: "file", Opaque: escapePath(path)}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.Itoa(int(busyTimeout/time.Millisecond))+")")
	if readOnly {
		q.Set("mode", "ro")
	} else {
		q.Set("mode", "rw")
		q.Add("_pragma", "synchronous(NORMAL)")
		// A small page cache (2 MB; dirty pages spill to the WAL before the
		// commit, which costs nothing more in WAL mode) stays in the CPU's
		// caches: a writer using 32 MB spends 10-15% more CPU per exchange,
		// zeroing and copying pages that are no longer cached.
		q.Add("_pragma", "cache_size(-2048)")
		// A background connection checkpoints (batcher.checkpoints); the
		// writer's own checkpoint at 256 MB of WAL is a safety net only.
		q.Add("_pragma", "wal_autocheckpoint(8192)")
	}
	return u.String() + "?" + q.Encode()
}

// escapePath escapes the characters that have a meaning in a SQLite URI.
func escapePath(path string) string {
	r := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")
	return r.Replace(path)
}

// createFile creates path exclusively, failing with ErrExists when it is
// there, and opens it as a writable database holding ddl and the meta rows
// (its version: that of kind).
func createFile(path, kind string, ddl []string) (*sql.DB, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("%w: remove it or choose another path", ErrExists)
	}
	if err != nil {
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", dsn(path, false))
	if err != nil {
		return nil, cleanup(path, err)
	}
	// One connection: the writer goroutine is the only user, and SQLite
	// writes one transaction at a time anyway.
	db.SetMaxOpenConns(1)
	// Big pages: fewer writes per exchange (a typical one is 1–2 KB). The
	// page size must be set first: WAL mode and the first table fix it.
	for _, q := range []string{"PRAGMA page_size = 32768", "PRAGMA journal_mode = WAL"} {
		if _, err := db.Exec(q); err != nil {
			db.Close()
			return nil, cleanup(path, err)
		}
	}
	tx, err := db.Begin()
	if err != nil {
		db.Close()
		return nil, cleanup(path, err)
	}
	for _, q := range ddl {
		if _, err := tx.Exec(q); err != nil {
			tx.Rollback()
			db.Close()
			return nil, cleanup(path, err)
		}
	}
	meta := [][2]string{
		{"kind", kind},
		{"version", strconv.Itoa(versions(kind))},
		{"created", time.Now().UTC().Format(time.RFC3339Nano)},
	}
	for _, kv := range meta {
		if _, err := tx.Exec(`INSERT INTO meta (key, value) VALUES (?, ?)`, kv[0], kv[1]); err != nil {
			tx.Rollback()
			db.Close()
			return nil, cleanup(path, err)
		}
	}
	if err := tx.Commit(); err != nil {
		db.Close()
		return nil, cleanup(path, err)
	}
	return db, nil
}

// finish turns a finished file from WAL back to a rollback journal, so
// that it is one self-contained file and read-only opens leave no -wal and
// -shm files behind. A reader that has the file open blocks the switch; then
// the file stays in WAL mode, which readers handle as well.
func finish(db *sql.DB) {
	db.Exec(`PRAGMA busy_timeout = 100`)
	db.Exec(`PRAGMA journal_mode = DELETE`)
}

// cleanup removes a file that createFile could not finish, and its WAL.
func cleanup(path string, err error) error {
	os.Remove(path)
	os.Remove(path + "-wal")
	os.Remove(path + "-shm")
	return err
}

// openFile opens an existing file of kind read-only and checks its meta
// table. It never creates a missing file.
func openFile(path, kind string) (*sql.DB, error) {
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errors.New("no such file")
		}
		return nil, err
	}
	if st.IsDir() {
		return nil, errors.New("is a directory")
	}
	// SQLite says "unable to open database file (14)" whatever the cause:
	// open it first to say why ("permission denied").
	f, err := os.Open(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, pe.Err // the caller names the path
		}
		return nil, err
	}
	f.Close()
	db, err := sql.Open("sqlite", dsn(path, true))
	if err != nil {
		return nil, err
	}
	if err := checkMeta(db, kind); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// checkMeta verifies that db is a replay file of kind, at a version this
// build reads.
func checkMeta(db *sql.DB, kind string) error {
	notOurs, badVersion := kindErrors(kind)
	ctx := context.Background()
	var n int
	err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'`).Scan(&n)
	if err != nil {
		return describeSQLiteError(err, notOurs)
	}
	if n == 0 {
		return notOurs
	}
	meta := map[string]string{}
	rows, err := db.QueryContext(ctx, `SELECT key, value FROM meta`)
	if err != nil {
		var se *sqlite.Error
		if errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_ERROR {
			return fmt.Errorf("%w: its meta table is not ours", notOurs)
		}
		return describeSQLiteError(err, notOurs)
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return fmt.Errorf("%w: bad meta table: %w", notOurs, err)
		}
		meta[k] = v
	}
	if err := rows.Err(); err != nil {
		return describeSQLiteError(err, notOurs)
	}
	got, ok := meta["kind"]
	switch {
	case !ok:
		return notOurs
	case got != kind:
		if got == kindRun || got == kindSnapshot {
			return fmt.Errorf("%w: it is a %s file, not a %s", notOurs, got, kind)
		}
		return notOurs
	}
	v, err := strconv.Atoi(meta["version"])
	if err != nil {
		return fmt.Errorf("%w %q", badVersion, meta["version"])
	}
	if latest := versions(kind); v < 1 || v > latest {
		if latest == 1 {
			return fmt.Errorf("%w %d (this build reads version 1)", badVersion, v)
		}
		return fmt.Errorf("%w %d (this build reads versions 1 to %d)", badVersion, v, latest)
	}
	return nil
}

// versions returns the version of kind's format this build writes, the
// latest it reads; it reads every version from 1 to that one.
func versions(kind string) int {
	if kind == kindRun {
		return RunSchemaVersion
	}
	return SchemaVersion
}

// kindError is a sentinel error in the words of a file's kind.
type kindError struct {
	sentinel error
	msg      string
}

func (e kindError) Error() string { return e.msg }
func (e kindError) Unwrap() error { return e.sentinel }

// kindErrors returns ErrNotSnapshot and ErrVersion as a file of kind says
// them: "not a replay run file", "unsupported run file version".
func kindErrors(kind string) (notOurs, badVersion error) {
	if kind == kindRun {
		return kindError{ErrNotSnapshot, "not a replay run file"}, kindError{ErrVersion, "unsupported run file version"}
	}
	return ErrNotSnapshot, ErrVersion
}

// describeSQLiteError turns SQLite's codes for files that are not databases
// into words a user can act on; notOurs is the kind's ErrNotSnapshot.
func describeSQLiteError(err, notOurs error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_NOTADB:
			return fmt.Errorf("%w: not a SQLite database", notOurs)
		case sqlite3.SQLITE_CORRUPT:
			return fmt.Errorf("file is corrupt: %w", err)
		case sqlite3.SQLITE_CANTOPEN:
			return fmt.Errorf("SQLite cannot open it: check that the file and its directory can be read (a file still being written also needs its -wal and -shm files beside it): %w", err)
		}
	}
	return err
}
