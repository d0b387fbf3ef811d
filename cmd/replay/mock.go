package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"

	"github.com/spf13/cobra"

	"github.com/replaykit/replay/internal/ca"
	"github.com/replaykit/replay/internal/listen"
	"github.com/replaykit/replay/mock"
	"github.com/replaykit/replay/snapshots"
)

type mockOptions struct {
	snapshot   string
	listen     string
	mock       []string
	behaviour  mockBehaviour
	caDir      string
	serve      []string
	resolve    []string
	upstreamCA string
	volatile   []string
	match      string
	limits     listen.Limits
	proto      protoFlags

	stdout, stderr io.Writer
	// onReady, when set, is told the addresses listened on (tests).
	onReady func(*mock.Listening)
}

func newCmdMock(s streams) *cobra.Command {
	opts := &mockOptions{stdout: s.out, stderr: s.err}
	cmd := &cobra.Command{
		Use:   "mock --snapshot SNAP --listen ADDR [--mock HOST:PORT]... [--on-miss error|passthrough] [--mock-timing recorded|none] [--serve LISTEN=HOST:PORT]...",
		Short: "Answer an app's outbound calls from a snapshot",
		Long:  longHelp("mock"),
		Example: `  replay mock --snapshot orders.snap --listen 127.0.0.1:8082
  replay mock --snapshot orders.snap --listen 127.0.0.1:8082 --mock api.stripe.com:443 --on-miss passthrough
  replay mock --snapshot orders.snap --serve 127.0.0.1:9001=catalog.example.com:443   # base URL http://127.0.0.1:9001`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			return mockRun(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.snapshot, "snapshot", "", "snapshot `FILE` to answer from")
	f.StringVar(&opts.listen, "listen", "", "serve the forward proxy (HTTP_PROXY/HTTPS_PROXY) on `ADDR`")
	f.StringArrayVar(&opts.mock, "mock", nil, "answer calls to the recorded service `HOST:PORT` from the snapshot (repeatable; default: every recorded service)")
	opts.behaviour.addFlags(f)
	addCADirFlag(f, &opts.caDir)
	f.StringArrayVar(&opts.serve, "serve", nil, "answer as the recorded service on a plain HTTP listener: `LISTEN=HOST:PORT` (repeatable)")
	f.StringArrayVar(&opts.resolve, "resolve", nil, "for calls passed through: `HOST:PORT=ADDR` dials ADDR for calls to HOST:PORT (repeatable)")
	f.StringVar(&opts.upstreamCA, "upstream-ca", "", "also trust the CA certificates in PEM `FILE` when passing calls through to HTTPS upstreams")
	f.StringVar(&opts.match, "match", "template", "the loosest `LEVEL` a call may match at: exact, loose or template")
	opts.proto.addFlags(f)
	f.StringArrayVar(&opts.volatile, "volatile", nil, "also ignore the values of query parameter or JSON member `KEY` when matching loosely (repeatable)")
	opts.limits.AddHTTPFlags(f)
	return cmd
}

// servePlan is one --serve: a listener answering as one service.
type servePlan struct {
	listen, service string
}

// mockPlan is the validated form of mockOptions.
type mockPlan struct {
	listen  string
	serve   []servePlan
	resolve map[string]string
	match   mock.Level
}

// plan validates opts; its errors are usage errors.
func (opts *mockOptions) plan() (*mockPlan, error) {
	if opts.snapshot == "" {
		return nil, usagef("mock: --snapshot SNAP is required")
	}
	if opts.listen == "" && len(opts.serve) == 0 {
		return nil, usagef("mock: nothing to serve: give --listen ADDR (a forward proxy) and/or --serve LISTEN=HOST:PORT")
	}
	p := &mockPlan{resolve: map[string]string{}}
	if opts.listen != "" {
		l, err := listen.Addr(opts.listen)
		if err != nil {
			return nil, usagef("mock: --listen: %v", err)
		}
		p.listen = l
	}
	for _, svc := range opts.mock {
		if !isHostPort(svc) {
			return nil, usagef("mock: --mock %q: want HOST:PORT, e.g. api.example.com:443", svc)
		}
	}
	if err := opts.behaviour.validate("mock"); err != nil {
		return nil, err
	}
	level, err := mock.ParseLevel(opts.match)
	if err != nil {
		return nil, usagef("mock: --match: %v", err)
	}
	p.match = level
	for _, s := range opts.serve {
		addr, svc, ok := strings.Cut(s, "=")
		if !ok || !isHostPort(svc) {
			return nil, usagef("mock: --serve %q: want LISTEN=HOST:PORT, e.g. 127.0.0.1:9001=api.example.com:443", s)
		}
		l, err := listen.Addr(addr)
		if err != nil {
			return nil, usagef("mock: --serve %q: %v", s, err)
		}
		p.serve = append(p.serve, servePlan{listen: l, service: svc})
	}
	for _, s := range opts.resolve {
		from, to, ok := strings.Cut(s, "=")
		if !ok || !isHostPort(from) || !isHostPort(to) {
			return nil, usagef("mock: --resolve %q: want HOST:PORT=ADDR, e.g. api.example.com:443=127.0.0.1:8443", s)
		}
		p.resolve[from] = to
	}
	for _, k := range opts.volatile {
		if strings.TrimSpace(k) == "" {
			return nil, usagef("mock: --volatile: want a key name, e.g. request_id")
		}
	}
	return p, nil
}

func isHostPort(s string) bool {
	host, port, err := net.SplitHostPort(s)
	return err == nil && host != "" && port != ""
}

func mockRun(ctx context.Context, opts *mockOptions) error {
	p, err := opts.plan()
	if err != nil {
		return err
	}
	snap, rules, err := openMockSnapshot(ctx, opts.snapshot)
	if err != nil {
		return err
	}
	defer snap.Close()
	caDir := opts.caDir
	if caDir == "" {
		if caDir, err = ca.DefaultDir(); err != nil {
			return fmt.Errorf("mock: %w", err)
		}
	}
	authority, err := ca.LoadOrCreate(caDir)
	if err != nil {
		return fmt.Errorf("mock: %w", err)
	}
	var upstreamTLS *tls.Config
	if opts.upstreamCA != "" {
		roots, err := ca.RootsWith(opts.upstreamCA)
		if err != nil {
			return fmt.Errorf("mock: --upstream-ca: %w", err)
		}
		upstreamTLS = &tls.Config{RootCAs: roots}
	}
	logger := slog.New(slog.NewTextHandler(opts.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	dec, err := opts.proto.decoder(ctx, "mock")
	if err != nil {
		return err
	}
	srv, err := mock.New(*opts.behaviour.apply(&mock.Config{
		Decoder:      dec,
		Snapshot:     snap,
		Services:     opts.mock,
		Match:        p.match,
		CA:           authority,
		UpstreamTLS:  upstreamTLS,
		Resolve:      p.resolve,
		Rules:        rules,
		VolatileKeys: opts.volatile,
		Logger:       logger,
		Limits:       opts.limits,
		Warn:         func(err error) { fmt.Fprintf(opts.stderr, "replay: warning: %v\n", err) },
	}))
	if errors.Is(err, mock.ErrUnknownService) {
		return usagef("%v", err)
	}
	if err != nil {
		return err
	}
	run, err := startMock(srv, p)
	if err != nil {
		return err
	}
	if err := printMockListening(opts.stdout, run, p, opts, authority); err != nil {
		run.Stop()
		return err
	}
	if opts.onReady != nil {
		opts.onReady(run)
	}
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-run.Err():
	}
	run.Stop()
	srv.WriteSummary(opts.stdout)
	return serveErr
}

// openMockSnapshot opens the snapshot a mock answers from, read as the
// calls come (an index in memory, the answers read in batches, as in
// run and compare), and its endpoint rules; it fails when the snapshot
// has no outbound exchange.
func openMockSnapshot(ctx context.Context, path string) (*snapshots.Snapshot, []snapshots.Rule, error) {
	snap, err := snapshots.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("mock: %w", err)
	}
	rules, err := snap.Rules()
	found := false
	if err == nil {
		for _, rerr := range snap.Index(ctx, snapshots.Outbound) {
			found, err = true, rerr
			break
		}
	}
	switch {
	case err != nil:
		snap.Close()
		return nil, nil, fmt.Errorf("mock: %w", err)
	case !found:
		snap.Close()
		return nil, nil, fmt.Errorf("mock: snapshot %s has no outbound exchanges to answer from (record the app's calls with replay record --outbound)", path)
	}
	return snap, rules, nil
}

// startMock listens on every address and serves.
func startMock(srv *mock.Server, p *mockPlan) (*mock.Listening, error) {
	var serve []mock.Serve
	for _, sp := range p.serve {
		serve = append(serve, mock.Serve{Listen: sp.listen, Service: sp.service})
	}
	run, err := srv.Listen(p.listen, serve)
	var le *mock.ListenError
	switch {
	case errors.Is(err, mock.ErrUnknownService):
		for _, sp := range p.serve {
			if _, e := srv.ServiceHandler(sp.service); e != nil {
				return nil, usagef("--serve %s=%s: %v", sp.listen, sp.service, e) // e says "mock: "
			}
		}
		return nil, usagef("mock: --serve: %v", err)
	case errors.As(err, &le):
		what := "--serve"
		if le.Serve == (mock.Serve{}) {
			what = "--listen"
		}
		return nil, fmt.Errorf("mock: %s %s: %w", what, le.Addr, le.Err)
	case err != nil:
		return nil, fmt.Errorf("mock: %w", err)
	}
	return run, nil
}

func printMockListening(w io.Writer, r *mock.Listening, p *mockPlan, opts *mockOptions, authority *ca.CA) error {
	var b strings.Builder
	fmt.Fprintf(&b, "mocking %s from %s (on miss: %s, timing: %s, match: %s)\n",
		strings.Join(r.Server().Services(), ", "), opts.snapshot, opts.behaviour.onMiss, opts.behaviour.timing, p.match)
	if r.Proxy != nil {
		bundle, err := authority.BundlePath()
		if err != nil {
			return fmt.Errorf("mock: %w", err)
		}
		proxy := "http://" + dialable(r.Proxy.Addr())
		fmt.Fprintf(&b, "forward proxy listening on %s; other hosts pass through. Start the app with:\n", r.Proxy.Addr())
		fmt.Fprintf(&b, "  HTTP_PROXY=%s\n  HTTPS_PROXY=%s\n  SSL_CERT_FILE=%s\n", proxy, proxy, shellQuote(bundle))
	}
	for i, l := range r.Serve {
		fmt.Fprintf(&b, "serving %s on %s: use base URL http://%s\n", p.serve[i].service, l.Addr(), dialable(l.Addr()))
	}
	b.WriteString("Ctrl-C to stop\n")
	_, err := io.WriteString(w, b.String())
	return err
}
