package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/examples/orders/catalog"
	"github.com/replaykit/replay/internal/ca"
	"github.com/replaykit/replay/internal/pgcluster"
	"github.com/replaykit/replay/recorder"
	"github.com/replaykit/replay/report"
	"github.com/replaykit/replay/session"
)

// The demo's fixed names and defaults.
const (
	// CatalogHost is the catalog API's name: Go clients never proxy
	// 127.0.0.1, so the app calls a name that the recorder maps to the
	// local stand-in and that the mock answers for.
	CatalogHost = "catalog.demo.test"
	// Orders is the number of orders in the database before each side.
	Orders = 60
	// DefaultDuration is Config.Duration when it is zero.
	DefaultDuration = 10 * time.Second
	// DefaultRounds is Config.Rounds when it is zero.
	DefaultRounds = 10
	// SnapshotFile is the snapshot's name in Config.Dir.
	SnapshotFile = "demo.snap"
	// CompareDir is the name, in Config.Dir, of the comparison's directory
	// (run files, build logs, reset log; the reports of a Config.Compare
	// that writes them).
	CompareDir = "compare"
)

// catalogAddr is the catalog API as the app dials it.
const catalogAddr = CatalogHost + ":443"

// Config configures Run. Replay is required; the zero value of every other
// field is useful.
type Config struct {
	// Replay is the replay binary: the app's builds are `REPLAY demo
	// orders` and the reset between the sides `REPLAY demo reset`.
	// Required.
	Replay string
	// Dir receives everything the demo writes: replay's CA (Dir/ca), the
	// snapshot, the recording's app log and the comparison's files. It is
	// created when missing; empty means a new replay-demo-* directory in
	// the temp dir.
	Dir string
	// Duration is the load per side in the comparison; zero means
	// DefaultDuration.
	Duration time.Duration
	// Rounds is the number of rounds of the demo's request mix
	// (app.Traffic, 6 requests each) recorded; zero means DefaultRounds.
	Rounds int

	// Out receives the demo's narrative: one "==> " line per step and what
	// each step started; nil discards it.
	Out io.Writer
	// Recorded, when set, is told the recording once its snapshot is
	// written, before the catalog stand-in stops: a CLI prints its summary
	// there. Its error ends the demo.
	Recorded func(Recording) error
	// Compare runs the comparison that Run configures; nil means
	// session.Compare, which renders nothing. A CLI sets it to run the
	// comparison and print and write its report.
	Compare func(context.Context, session.CompareConfig) (*report.ComparisonReport, error)
	// Warn, when set, is told what went wrong in the comparison without
	// stopping it (session.Config.Warn).
	Warn func(error)
	// Logger receives the recording proxies' diagnostics; nil discards
	// them.
	Logger *slog.Logger
}

// Recording is what the demo recorded.
type Recording struct {
	// Snapshot is the snapshot file's path, Dir/demo.snap.
	Snapshot string
	// Requests is the number of requests sent to the app while recording.
	Requests int
	// Summary is what was recorded, per endpoint, with SQL.
	Summary recorder.TallySummary
}

// Result is what a demo did.
type Result struct {
	// Dir is the absolute path of the directory that holds everything.
	Dir string
	// Recording is the recording step's outcome.
	Recording Recording
	// Report is the comparison of APP_SLOW=0 (baseline) with APP_SLOW=1
	// (candidate).
	Report *report.ComparisonReport
}

// Run runs the demo: a throwaway PostgreSQL seeded with Orders orders, the
// catalog stand-in with a certificate from replay's CA, the recording of
// the orders service, then the stand-in stopped and the comparison. It
// stops everything it started before it returns. Check the Result to know
// whether the comparison found the N+1.
func Run(ctx context.Context, cfg Config) (res *Result, err error) {
	made, err := cfg.prepare()
	if err != nil {
		return nil, err
	}
	defer func() {
		switch {
		case err == nil:
		case ctx.Err() != nil && cfg.comparing():
			// Interrupted in the comparison: the error names its run
			// files, so they stay, with the rest of the directory.
			err = fmt.Errorf("%w; the snapshot, build logs and run files are in %s", err, cfg.Dir)
		case made != "":
			os.RemoveAll(made) // a demo that could not run leaves nothing behind
		}
	}()
	r := &runner{cfg: cfg, out: cfg.Out}
	if r.out == nil {
		r.out = io.Discard
	}
	r.step("Starting a throwaway PostgreSQL and the catalog API stand-in")
	pg, err := r.startPostgres(ctx)
	if err != nil {
		return nil, err
	}
	defer pg.Stop()
	authority, err := ca.LoadOrCreate(filepath.Join(cfg.Dir, "ca"))
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	stand, err := r.startCatalog(ctx, authority)
	if err != nil {
		return nil, err
	}
	defer stand.Close()

	r.step("Recording the orders service (APP_SLOW=0): inbound requests, HTTPS calls to the catalog, SQL")
	res = &Result{Dir: cfg.Dir}
	if res.Recording, err = r.record(ctx, authority, pg, stand.Addr()); err != nil {
		return nil, err
	}
	if cfg.Recorded != nil {
		if err := cfg.Recorded(res.Recording); err != nil {
			return nil, fmt.Errorf("demo: %w", err)
		}
	}

	r.step("Stopping the catalog stand-in: from now on the mock answers for %s", CatalogHost)
	if err := stopCatalog(stand); err != nil {
		return nil, err
	}

	r.step("Comparing APP_SLOW=0 (baseline) with APP_SLOW=1 (candidate): %s of load each, interleaved", cfg.Duration)
	if res.Report, err = r.compare(ctx, authority, pg, res.Recording.Snapshot); err != nil {
		return nil, err
	}
	return res, nil
}

// prepare checks cfg, fills its defaults and creates its directory,
// returning it when it made it ("" when it existed).
func (cfg *Config) prepare() (made string, err error) {
	switch {
	case cfg.Replay == "":
		return "", errors.New("demo: no replay binary to start the orders service with")
	case cfg.Duration < 0:
		return "", fmt.Errorf("demo: negative duration %s", cfg.Duration)
	case cfg.Rounds < 0:
		return "", fmt.Errorf("demo: negative number of rounds %d", cfg.Rounds)
	}
	if cfg.Duration == 0 {
		cfg.Duration = DefaultDuration
	}
	if cfg.Rounds == 0 {
		cfg.Rounds = DefaultRounds
	}
	if cfg.Dir == "" {
		cfg.Dir, err = os.MkdirTemp("", "replay-demo-")
		made = cfg.Dir
	} else if _, statErr := os.Stat(cfg.Dir); errors.Is(statErr, os.ErrNotExist) {
		err, made = os.MkdirAll(cfg.Dir, 0o755), cfg.Dir
	}
	if err != nil {
		return "", fmt.Errorf("demo: %w", err)
	}
	if cfg.Dir, err = filepath.Abs(cfg.Dir); err != nil {
		return made, fmt.Errorf("demo: %w", err)
	}
	return made, nil
}

// comparing reports whether the comparison has started writing its run
// files in cfg.Dir.
func (cfg *Config) comparing() bool {
	runs, _ := filepath.Glob(filepath.Join(cfg.Dir, CompareDir, "*.run"))
	return len(runs) > 0
}

// runner is one run of the demo.
type runner struct {
	cfg Config
	out io.Writer
}

// step announces a step of the demo.
func (r *runner) step(format string, args ...any) {
	fmt.Fprintf(r.out, "\n==> "+format+"\n", args...)
}

// startPostgres starts the throwaway cluster and seeds it.
func (r *runner) startPostgres(ctx context.Context) (*pgcluster.Cluster, error) {
	pg, err := pgcluster.Start(ctx, pgcluster.Config{})
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	fmt.Fprintf(r.out, "PostgreSQL    %s (data in %s, removed at the end)\n", pg.Addr(), pg.Dir)
	if err := Reset(ctx, pg.URL("postgres"), Orders); err != nil {
		pg.Stop()
		return nil, err
	}
	fmt.Fprintf(r.out, "seeded        %d orders\n", Orders)
	return pg, nil
}

// startCatalog starts the catalog stand-in with a certificate for
// CatalogHost from authority.
func (r *runner) startCatalog(ctx context.Context, authority *ca.CA) (*catalog.Server, error) {
	leaf, err := authority.Leaf(CatalogHost)
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	stand, err := catalog.Start(ctx, *leaf, "")
	if err != nil {
		return nil, fmt.Errorf("demo: start the catalog stand-in: %w", err)
	}
	fmt.Fprintf(r.out, "catalog API   https://%s → stand-in on %s\n", CatalogHost, stand.Addr())
	return stand, nil
}

// stopCatalog stops the stand-in and makes sure nothing answers on its
// address any more, so that only the mock can answer for the catalog.
func stopCatalog(stand *catalog.Server) error {
	stand.Close()
	if c, err := net.DialTimeout("tcp", stand.Addr(), time.Second); err == nil {
		c.Close()
		return errors.New("demo: the catalog stand-in still answers after it was stopped")
	}
	return nil
}

// Check reports whether the comparison found what the demo expects: no
// wiring fault, an N+1 regression in GET /orders and no other endpoint
// regressed. Its error says
// what was found instead.
func (res *Result) Check() error {
	if res.Report == nil || res.Report.Comparison == nil {
		return errors.New("demo: no comparison to check")
	}
	c := res.Report.Comparison
	if len(c.Faults) > 0 {
		return fmt.Errorf("demo: the comparison has wiring faults: %s", c.Faults[0].Text)
	}
	orders := c.Endpoint("GET /orders")
	if orders == nil || orders.Verdict != analyzer.Regression || orders.Cause != analyzer.CauseNPlusOne {
		got := "no result for GET /orders"
		if orders != nil {
			got = fmt.Sprintf("%s (%s)", orders.Verdict, orders.Explanation)
		}
		return fmt.Errorf("demo: expected an N+1 regression in GET /orders, got %s", got)
	}
	for _, e := range c.Endpoints {
		if e.Endpoint != "GET /orders" && e.Verdict == analyzer.Regression {
			return fmt.Errorf("demo: expected only GET /orders to regress, but %s did too: %s", e.Endpoint, e.Explanation)
		}
	}
	return nil
}
