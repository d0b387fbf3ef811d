package snapshots

// THIS FILE IS THE AGREED API, WITH STUB BODIES. The snapshots helper replaces
// it with real files (snapshot.go, writer.go, reader.go, run.go, endpoint.go,
// jsonl.go, har.go) keeping every signature below. Other packages may code
// against these signatures now.

import (
	"context"
	"errors"
	"io"
	"iter"
	"log/slog"
	"time"
)

var errTODO = errors.New("snapshots: not implemented yet")

// SchemaVersion is the snapshot file format version this package writes.
const SchemaVersion = 1

// Sentinel errors; wrapped with the file name.
var (
	// ErrNotSnapshot: the file is not a replay snapshot (or run file).
	ErrNotSnapshot = errors.New("not a replay snapshot")
	// ErrVersion: the file's format version is unknown or newer than this build.
	ErrVersion = errors.New("unsupported snapshot version")
	// ErrExists: Create was asked to write over an existing file.
	ErrExists = errors.New("file exists")
)

// Options configure a Writer. The zero value is useful.
type Options struct {
	// Rules are user-given endpoint templates that win over the computed ones.
	Rules []Rule
	// FlushInterval bounds how long a written record waits before it is
	// committed; zero means one second.
	FlushInterval time.Duration
	// BatchSize is the number of records committed in one transaction at
	// most; zero means 10000.
	BatchSize int
	// Logger receives write errors; nil discards.
	Logger *slog.Logger
}

// Writer appends exchanges and statements to a new snapshot file. Its
// methods are safe for concurrent use; records are committed in batches at
// least once per FlushInterval, so a killed process loses at most that much.
type Writer struct{}

// Create creates a new snapshot file at path; it fails with ErrExists when
// the file exists.
func Create(path string, opts Options) (*Writer, error) { return nil, errTODO }

// NewID reserves an exchange ID, for an exchange still in flight.
func (w *Writer) NewID() int64 { return 0 }

// AddExchange queues e for writing. It computes e.Endpoint when empty and
// assigns e.ID when zero. It does not block on disk.
func (w *Writer) AddExchange(e *Exchange) {}

// AddStatement queues s for writing.
func (w *Writer) AddStatement(s *Statement) {}

// CountSeen adds one to the requests seen in direction d (capture stats).
func (w *Writer) CountSeen(d Direction) {}

// Stats returns the capture statistics so far.
func (w *Writer) Stats() CaptureStats { return CaptureStats{} }

// Close commits everything queued and closes the file.
func (w *Writer) Close() error { return errTODO }

// Filter selects exchanges. Zero fields match everything.
type Filter struct {
	Direction Direction
	// Services, when not empty, lists the host:port services to include.
	Services []string
}

// Snapshot is an open snapshot file, read-only.
type Snapshot struct{}

// Open opens a snapshot for reading; it fails with a clear error naming the
// file when the file is missing, corrupt, not a snapshot (ErrNotSnapshot) or
// of an unknown version (ErrVersion).
func Open(path string) (*Snapshot, error) { return nil, errTODO }

// Path returns the file the snapshot was opened from.
func (s *Snapshot) Path() string { return "" }

// Exchanges yields exchanges matching f in order of ID.
func (s *Snapshot) Exchanges(ctx context.Context, f Filter) iter.Seq2[*Exchange, error] {
	return func(yield func(*Exchange, error) bool) { yield(nil, errTODO) }
}

// Statements yields all statements in order of ID.
func (s *Snapshot) Statements(ctx context.Context) iter.Seq2[*Statement, error] {
	return func(yield func(*Statement, error) bool) { yield(nil, errTODO) }
}

// Stats returns the capture statistics stored in the file.
func (s *Snapshot) Stats() (CaptureStats, error) { return CaptureStats{}, errTODO }

// Close closes the file.
func (s *Snapshot) Close() error { return nil }

// Rule is a user-given endpoint template, e.g. "GET /orders/{id}/status".
type Rule struct{}

// ParseRule parses "METHOD /path/{param}/..." (METHOD may be "*").
func ParseRule(s string) (Rule, error) { return Rule{}, errTODO }

// Endpoint returns the endpoint of a request: method plus path template.
// Rules win; otherwise path segments that are numbers, UUIDs, long hex or
// id-like tokens become {id}. The query string is not part of it.
func Endpoint(method, path string, rules []Rule) string { return "" }

// ExportJSONL writes the snapshot as JSON Lines: a header line with the format
// version, then one exchange or statement per line.
func ExportJSONL(ctx context.Context, s *Snapshot, w io.Writer) error { return errTODO }

// ImportJSONL reads JSON Lines written by ExportJSONL into w.
func ImportJSONL(ctx context.Context, r io.Reader, w *Writer) error { return errTODO }

// ExportHAR writes the snapshot's exchanges as HAR 1.2; statements and replay
// fields go in "_replay" custom fields so that the round trip is lossless.
func ExportHAR(ctx context.Context, s *Snapshot, w io.Writer) error { return errTODO }

// ImportHAR reads a HAR 1.2 file (ours, Chrome's, Firefox's) into w.
func ImportHAR(ctx context.Context, r io.Reader, w *Writer) error { return errTODO }

// RunInfo describes a run: what was replayed against what, and how.
type RunInfo struct {
	// Name labels the run, e.g. "baseline" or "candidate".
	Name string
	// Snapshot is the path of the snapshot replayed.
	Snapshot string
	// Target is the URL the requests went to.
	Target string
	// Started and Ended bound the run.
	Started, Ended time.Time
	// Settings records the run's settings (load model, goals, headers…) as
	// key/value pairs for reports.
	Settings map[string]string
	// MockMisses counts requests the mock could not answer.
	MockMisses int64
	// Statements counts SQL statements seen by the counter in total,
	// attributed or not.
	Statements int64
}

// RunWriter streams results into a new run file.
type RunWriter struct{}

// CreateRun creates a run file at path (ErrExists when it exists).
func CreateRun(path string, info RunInfo) (*RunWriter, error) { return nil, errTODO }

// Add queues r for writing, assigning r.Seq when zero. Safe for concurrent use.
func (w *RunWriter) Add(r *Result) {}

// Close writes info (its Ended, MockMisses, Statements and Settings
// replace those given to CreateRun), commits and closes the file.
func (w *RunWriter) Close(info RunInfo) error { return errTODO }

// Run is an open run file, read-only.
type Run struct{}

// OpenRun opens a run file, with the same errors as Open.
func OpenRun(path string) (*Run, error) { return nil, errTODO }

// Info returns the run's description.
func (r *Run) Info() RunInfo { return RunInfo{} }

// Results yields the run's results in order of Seq.
func (r *Run) Results(ctx context.Context) iter.Seq2[*Result, error] {
	return func(yield func(*Result, error) bool) { yield(nil, errTODO) }
}

// Close closes the file.
func (r *Run) Close() error { return nil }
