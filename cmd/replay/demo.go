package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/examples/orders/app"
	"github.com/replaykit/replay/examples/orders/catalog"
	"github.com/replaykit/replay/internal/ca"
	"github.com/replaykit/replay/internal/pgcluster"
	"github.com/replaykit/replay/mock"
	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/report"
	"github.com/replaykit/replay/session"
)

// The demo's fixed names.
const (
	// demoCatalogHost is the catalog API's name: Go clients never proxy
	// 127.0.0.1, so the app calls a name that the recorder maps to the
	// local stand-in and that the mock answers for.
	demoCatalogHost = "catalog.demo.test"
	demoCatalog     = demoCatalogHost + ":443"
	// demoOrders is the number of orders in the database before each side.
	demoOrders = 60
)

type demoOptions struct {
	out      string
	duration time.Duration
	rounds   int

	stdout, stderr io.Writer
	progress       bool
	// self is the replay binary that the demo starts as the app's builds.
	self string
}

func newCmdDemo(s streams) *cobra.Command {
	opts := &demoOptions{stdout: s.out, stderr: s.err, progress: s.outTTY}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the whole flow on the demo workload: record, then compare a build with an N+1",
		Long: `demo runs replay's whole flow on the demo workload (examples/orders, an orders
service on PostgreSQL that calls an HTTPS catalog API), with nothing to set up
beyond the installed PostgreSQL binaries:

  1. starts a throwaway PostgreSQL cluster and a local stand-in for the catalog
     API (HTTPS, with a certificate from replay's CA), and seeds 60 orders;
  2. records traffic of the service (APP_SLOW=0): inbound requests, its HTTPS
     calls to the catalog (through the TLS-intercepting proxy) and its SQL;
  3. stops the catalog stand-in: from now on the mock answers from the snapshot;
  4. compares the build with APP_SLOW=0 (baseline) against APP_SLOW=1
     (candidate, whose GET /orders runs one query per order: an N+1), both
     started by replay, with the catalog mocked and SQL counted per request;
  5. prints the report, which names the N+1 in GET /orders.

Everything it writes (snapshot, run files, build logs, reports) stays in the
output directory. It exits 0 when the comparison found what the demo expects
(the N+1 regression in GET /orders), 1 otherwise; replay compare itself exits
99 on a regression, which is what a CI job would see.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			return demoRun(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.out, "out", "", "write everything to `DIR` (default: a new replay-demo-* directory in the temp dir)")
	f.DurationVar(&opts.duration, "duration", 10*time.Second, "load `D` per side in the comparison")
	f.IntVar(&opts.rounds, "rounds", 10, "record `N` rounds of the demo's request mix (6 requests each)")
	cmd.AddCommand(newCmdDemoOrders(s), newCmdDemoReset(s))
	return cmd
}

func demoRun(ctx context.Context, opts *demoOptions) error {
	if opts.duration < time.Second {
		return usagef("demo: --duration %s: want at least 1s", opts.duration)
	}
	if opts.rounds < 1 {
		return usagef("demo: --rounds %d: want at least 1", opts.rounds)
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("demo: find the replay binary: %w", err)
	}
	opts.self = self
	if opts.out == "" {
		if opts.out, err = os.MkdirTemp("", "replay-demo-"); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
	} else if err := os.MkdirAll(opts.out, 0o755); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if opts.out, err = filepath.Abs(opts.out); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	w := opts.stdout
	start := time.Now()
	step := func(format string, args ...any) {
		fmt.Fprintf(w, "\n==> "+format+"\n", args...)
	}

	step("Starting a throwaway PostgreSQL and the catalog API stand-in")
	pg, err := pgcluster.Start(ctx, pgcluster.Config{})
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer pg.Stop()
	dbURL := pg.URL("postgres")
	fmt.Fprintf(w, "PostgreSQL    %s (data in %s, removed at the end)\n", pg.Addr(), pg.Dir)
	if err := demoReset(ctx, dbURL, demoOrders); err != nil {
		return err
	}
	fmt.Fprintf(w, "seeded        %d orders\n", demoOrders)

	authority, err := ca.LoadOrCreate(filepath.Join(opts.out, "ca"))
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	leaf, err := authority.Leaf(demoCatalogHost)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	stand, err := catalog.Start(ctx, *leaf, "")
	if err != nil {
		return fmt.Errorf("demo: start the catalog stand-in: %w", err)
	}
	defer stand.Close()
	fmt.Fprintf(w, "catalog API   https://%s → stand-in on %s\n", demoCatalogHost, stand.Addr())

	snap := filepath.Join(opts.out, "demo.snap")
	step("Recording the orders service (APP_SLOW=0): inbound requests, HTTPS calls to the catalog, SQL")
	if err := demoRecord(ctx, opts, authority, pg, stand.Addr(), snap); err != nil {
		return err
	}

	step("Stopping the catalog stand-in: from now on the mock answers for %s", demoCatalogHost)
	stand.Close()
	if c, err := net.DialTimeout("tcp", stand.Addr(), time.Second); err == nil {
		c.Close()
		return errors.New("demo: the catalog stand-in still answers after it was stopped")
	}

	step("Comparing APP_SLOW=0 (baseline) with APP_SLOW=1 (candidate): %s of load each, interleaved", opts.duration)
	rep, err := demoCompare(ctx, opts, snap, dbURL, pg.Addr())
	if err != nil {
		return err
	}

	fmt.Fprintf(w, "\nEverything is in %s (snapshot demo.snap; run files, build logs and reports in compare/).\n", opts.out)
	orders := rep.Comparison.Endpoint("GET /orders")
	if orders == nil || orders.Verdict != analyzer.Regression || orders.Cause != analyzer.CauseNPlusOne {
		got := "no result for GET /orders"
		if orders != nil {
			got = fmt.Sprintf("%s (%s)", orders.Verdict, orders.Explanation)
		}
		return fmt.Errorf("demo: expected an N+1 regression in GET /orders, got %s", got)
	}
	for _, e := range rep.Comparison.Endpoints {
		if e.Endpoint != "GET /orders" && e.Verdict == analyzer.Regression {
			return fmt.Errorf("demo: expected only GET /orders to regress, but %s did too: %s", e.Endpoint, e.Explanation)
		}
	}
	fmt.Fprintf(w, "The demo found the N+1 in GET /orders, as expected, in %s. In CI, `replay compare` exits 99 here.\n",
		time.Since(start).Round(time.Second))
	return nil
}

// newCmdDemoOrders runs the demo's orders service (examples/orders) from the
// replay binary, so that the demo needs no Go toolchain: the same as
// `go run ./examples/orders`, configured by PORT, DATABASE_URL, APP_SLOW,
// CATALOG_URL and the proxy and CA variables.
func newCmdDemoOrders(s streams) *cobra.Command {
	return &cobra.Command{
		Use:    "orders",
		Short:  "Run the demo's orders service (configured by environment variables)",
		Hidden: true,
		Args:   exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			logger := slog.New(slog.NewTextHandler(s.err, nil))
			return app.Serve(cmd.Context(), os.Getenv, logger)
		},
	}
}

// newCmdDemoReset brings the demo's database (DATABASE_URL) to its known
// state; the demo's comparison runs it as --reset.
func newCmdDemoReset(s streams) *cobra.Command {
	n := demoOrders
	cmd := &cobra.Command{
		Use:    "reset",
		Short:  "Reset the demo's database (DATABASE_URL) to N seeded orders",
		Hidden: true,
		Args:   exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			url := os.Getenv("DATABASE_URL")
			if url == "" {
				return usagef("demo reset: DATABASE_URL is not set")
			}
			return demoReset(cmd.Context(), url, n)
		},
	}
	cmd.Flags().IntVar(&n, "orders", demoOrders, "seed `N` orders")
	return cmd
}

func demoReset(ctx context.Context, url string, n int) error {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return fmt.Errorf("demo reset: %w", err)
	}
	defer pool.Close()
	if err := app.Reset(ctx, pool, n); err != nil {
		return fmt.Errorf("demo %w", err)
	}
	return nil
}

func demoFreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("demo: pick a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// demoCompare compares APP_SLOW=0 with APP_SLOW=1 through the session
// library, as `replay compare` would with the demo's flags, and writes the
// report in every format.
func demoCompare(ctx context.Context, opts *demoOptions, snap, dbURL, dbAddr string) (*report.ComparisonReport, error) {
	inbound, outbound, err := loadExchanges(ctx, snap, true)
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	authority, err := ca.LoadOrCreate(filepath.Join(opts.out, "ca"))
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	build := shellQuote(opts.self) + " demo orders"
	reset := fmt.Sprintf("DATABASE_URL=%s %s demo reset --orders %d", shellQuote(dbURL), shellQuote(opts.self), demoOrders)
	plan := replayer.ComparePlan{Load: replayer.LoadPlan{VUs: compareDefaultVUs, Duration: opts.duration}, Explain: defaultExplain, Warmup: compareDefaultWarmup}
	settings := map[string]string{
		"model": "closed", report.SettingVUs: strconv.Itoa(compareDefaultVUs), report.SettingDuration: opts.duration.String(),
		report.SettingLoad: fmt.Sprintf("closed model, %d VUs, %s per side", compareDefaultVUs, opts.duration),
		"order":            "interleaved", "slices": strconv.Itoa(replayer.DefaultSlices(opts.duration)), "warmup": plan.Warmup.String(),
		"explain": strconv.Itoa(defaultExplain), "timeout": replayer.DefaultTimeout.String(),
		"mock": demoCatalog, "mock_timing": mock.TimingNone, "on_miss": mock.OnMissError, "postgres": dbAddr, "reset": reset,
	}
	cfg := session.CompareConfig{
		Config: session.Config{
			Snapshot: snap, Inbound: inbound, Settings: settings,
			Env:      []string{"DATABASE_URL=" + dbURL, "CATALOG_URL=https://" + demoCatalogHost},
			Mock:     &mock.Config{Exchanges: outbound, Services: []string{demoCatalog}},
			CA:       authority,
			Postgres: &session.Postgres{Upstream: dbAddr},
			Warn:     func(err error) { fmt.Fprintf(opts.stderr, "replay: warning: %v\n", err) },
		},
		Baseline:  session.SideConfig{Name: "baseline", Cmd: build, Env: []string{"APP_SLOW=0"}},
		Candidate: session.SideConfig{Name: "candidate", Cmd: build, Env: []string{"APP_SLOW=1"}},
		Dir:       filepath.Join(opts.out, "compare"),
		Plan:      plan,
		Reset:     reset,
	}
	formats := []report.Format{report.Text, report.Markdown, report.JSON, report.JUnit, report.HTML}
	return runComparison(ctx, cfg, formats, streams{out: opts.stdout, err: opts.stderr}, opts.progress)
}
