package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/replaykit/replay/internal/ca"
	"github.com/replaykit/replay/recorder"
	"github.com/replaykit/replay/snapshots"
	"github.com/replaykit/replay/sqlcount"
)

type recordOptions struct {
	out           string
	inbound       []string
	outbound      string
	outboundHTTP2 bool
	postgres      string
	pgTLS         pgTLSOptions
	caDir         string
	redactHeaders []string
	bodyLimit     int64
	endpoints     []string
	resolve       []string
	upstreamCA    string
	stopTimeout   time.Duration
	fromPcap      string
	ports         []int

	stdout, stderr io.Writer
	// interrupts delivers SIGINT/SIGTERM: the first stops gracefully, the
	// second at once. Nil: no signals (tests cancel the context instead).
	interrupts <-chan os.Signal
	// onReady, when set, is told the addresses listened on (tests).
	onReady func(*recording)
}

func newCmdRecord(s streams) *cobra.Command {
	opts := &recordOptions{stdout: s.out, stderr: s.err}
	cmd := &cobra.Command{
		Use:   "record --out SNAP [--inbound LISTEN=URL]... [--outbound LISTEN] [--postgres LISTEN=HOST:PORT] | --from-pcap FILE --out SNAP [--port N]...",
		Short: "Record a service's traffic into a snapshot",
		Long: `record puts recording proxies around a running app and writes every exchange
to the snapshot SNAP, until it is stopped with Ctrl-C (SIGINT) or SIGTERM.

  --inbound LISTEN=URL         a reverse proxy on LISTEN that forwards to the app
                               at URL: send the traffic to record to LISTEN
  --outbound LISTEN            a forward proxy that the app reaches through
                               HTTP_PROXY/HTTPS_PROXY; HTTPS is intercepted with
                               replay's CA (see 'replay ca')
  --postgres LISTEN=HOST:PORT  a PostgreSQL proxy in front of the database at
                               HOST:PORT: point the app's database address at LISTEN

At least one is needed; --inbound may be given several times. LISTEN is
[HOST]:PORT (port 0 picks a free one; the address is printed).

On the first signal, record stops accepting, finishes the exchanges in flight,
writes everything and prints the exchanges per endpoint. A second signal quits
at once with exit code 1: the snapshot then keeps what was committed, all but
about the last second.

With --from-pcap FILE, record imports a packet capture instead (pcap or
pcapng, possibly gzipped, from tcpdump, Wireshark or dumpcap): the HTTP/1
exchanges sent to the servers on the --port ports (default: every port that
carries HTTP requests) become inbound exchanges; it prints the exchanges per
endpoint and exits. TLS traffic cannot be decrypted: capture the plain HTTP
between the TLS terminator and the app. Capture on the app's interface
(tcpdump -i lo for a local app) or on all of them (tcpdump -i any).`,
		Example: `  replay record --out orders.snap --inbound 127.0.0.1:8081=http://127.0.0.1:8080
  replay record --out orders.snap --inbound :8081=http://127.0.0.1:8080 \
      --outbound 127.0.0.1:8082 --postgres 127.0.0.1:6432=127.0.0.1:5432 \
      --endpoint 'GET /orders/{id}/status' --redact-header X-Api-Key
  tcpdump -i lo -w orders.pcap 'tcp port 8080'   # then Ctrl-C
  replay record --from-pcap orders.pcap --port 8080 --out orders.snap`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			sig := make(chan os.Signal, 2)
			signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
			defer signal.Stop(sig)
			opts.interrupts = sig
			return recordRun(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.out, "out", "", "snapshot `FILE` to create (must not exist)")
	f.StringArrayVar(&opts.inbound, "inbound", nil, "record inbound HTTP: `LISTEN=URL` is a reverse proxy on LISTEN to the app at URL (repeatable)")
	f.StringVar(&opts.outbound, "outbound", "", "record outbound HTTP(S): a forward proxy on `LISTEN` for the app's HTTP_PROXY/HTTPS_PROXY")
	f.BoolVar(&opts.outboundHTTP2, "outbound-http2", false, "for --outbound: let apps speak HTTP/2 inside intercepted HTTPS (offered by ALPN; default HTTP/1.1)")
	f.StringVar(&opts.postgres, "postgres", "", "record SQL statements: `LISTEN=HOST:PORT` is a proxy on LISTEN to PostgreSQL at HOST:PORT")
	f.StringVar(&opts.caDir, "ca-dir", "", "`DIR` of replay's CA for --outbound and --postgres-tls (default $XDG_CONFIG_HOME/replay/ca or ~/.config/replay/ca)")
	opts.pgTLS.addFlags(f, "postgres-")
	f.StringArrayVar(&opts.redactHeaders, "redact-header", nil, "also redact the values of header `NAME` (repeatable; Authorization, Cookie, Set-Cookie, Proxy-Authorization always are)")
	f.Int64Var(&opts.bodyLimit, "body-limit", recorder.DefaultBodyLimit, "record at most `BYTES` of each body (longer ones are marked truncated; 0 records none)")
	f.StringArrayVar(&opts.endpoints, "endpoint", nil, "endpoint template `RULE` that wins over the computed ones, e.g. 'GET /orders/{id}/status' (repeatable)")
	f.StringArrayVar(&opts.resolve, "resolve", nil, "for --outbound: `HOST:PORT=ADDR` dials ADDR for calls to HOST:PORT (repeatable)")
	f.StringVar(&opts.upstreamCA, "upstream-ca", "", "also trust the CA certificates in PEM `FILE` when connecting to HTTPS upstreams")
	f.DurationVar(&opts.stopTimeout, "stop-timeout", 10*time.Second, "on stop, how long to wait for the exchanges in flight")
	f.StringVar(&opts.fromPcap, "from-pcap", "", "import the HTTP exchanges in the packet capture `FILE` (pcap or pcapng) instead of recording live")
	f.IntSliceVar(&opts.ports, "port", nil, "with --from-pcap: record the traffic to server port `N` (repeatable; default: every port that carries HTTP)")
	return cmd
}

// recordPlan is the validated form of recordOptions.
type recordPlan struct {
	inbound   []inboundSpec
	outbound  string
	pgListen  string
	pgServer  string
	rules     []snapshots.Rule
	resolve   map[string]string
	bodyLimit int64 // as recorder configs take it: negative records none
}

type inboundSpec struct {
	listen string
	target *url.URL
}

// plan validates opts; its errors are usage errors.
func (opts *recordOptions) plan() (*recordPlan, error) {
	p := &recordPlan{}
	if opts.out == "" {
		return nil, usagef("record: --out SNAP is required")
	}
	if err := opts.checkPcap(); err != nil {
		return nil, err
	}
	if opts.fromPcap == "" && len(opts.inbound) == 0 && opts.outbound == "" && opts.postgres == "" {
		return nil, usagef("record: nothing to record: give --inbound LISTEN=URL, --outbound LISTEN or --postgres LISTEN=HOST:PORT")
	}
	for _, s := range opts.inbound {
		listen, target, ok := strings.Cut(s, "=")
		if !ok {
			return nil, usagef("record: --inbound %q: want LISTEN=URL, e.g. 127.0.0.1:8081=http://127.0.0.1:8080", s)
		}
		l, err := listenAddr(listen)
		if err != nil {
			return nil, usagef("record: --inbound %q: %v", s, err)
		}
		u, err := targetURL(target)
		if err != nil {
			return nil, usagef("record: --inbound %q: %v", s, err)
		}
		p.inbound = append(p.inbound, inboundSpec{l, u})
	}
	if opts.outbound != "" {
		l, err := listenAddr(opts.outbound)
		if err != nil {
			return nil, usagef("record: --outbound %q: %v", opts.outbound, err)
		}
		p.outbound = l
	}
	if opts.postgres != "" {
		listen, server, ok := strings.Cut(opts.postgres, "=")
		if !ok {
			return nil, usagef("record: --postgres %q: want LISTEN=HOST:PORT, e.g. 127.0.0.1:6432=127.0.0.1:5432", opts.postgres)
		}
		l, err := listenAddr(listen)
		if err != nil {
			return nil, usagef("record: --postgres %q: %v", opts.postgres, err)
		}
		if h, port, err := net.SplitHostPort(server); err != nil || h == "" || port == "" {
			return nil, usagef("record: --postgres %q: the server %q is not HOST:PORT", opts.postgres, server)
		}
		p.pgListen, p.pgServer = l, server
	}
	if err := opts.pgTLS.validate("record", opts.postgres != ""); err != nil {
		return nil, err
	}
	rules, err := snapshots.ParseRules(opts.endpoints)
	if err != nil {
		return nil, usagef("record: --endpoint: %v", err)
	}
	p.rules = rules
	for _, h := range opts.redactHeaders {
		if strings.TrimSpace(h) == "" || strings.ContainsAny(h, ": \t") {
			return nil, usagef("record: --redact-header %q: want a header name, e.g. X-Api-Key", h)
		}
	}
	switch {
	case opts.bodyLimit < 0:
		return nil, usagef("record: --body-limit %d: want 0 or more bytes", opts.bodyLimit)
	case opts.bodyLimit == 0:
		p.bodyLimit = -1
	default:
		p.bodyLimit = opts.bodyLimit
	}
	if len(opts.resolve) > 0 && p.outbound == "" {
		return nil, usagef("record: --resolve applies to --outbound, which is not given")
	}
	if opts.outboundHTTP2 && p.outbound == "" {
		return nil, usagef("record: --outbound-http2 applies to --outbound, which is not given")
	}
	p.resolve = map[string]string{}
	for _, s := range opts.resolve {
		from, to, ok := strings.Cut(s, "=")
		_, _, err1 := net.SplitHostPort(from)
		_, _, err2 := net.SplitHostPort(to)
		if !ok || err1 != nil || err2 != nil {
			return nil, usagef("record: --resolve %q: want HOST:PORT=ADDR, e.g. api.example.com:443=127.0.0.1:8443", s)
		}
		p.resolve[from] = to
	}
	if opts.stopTimeout <= 0 {
		return nil, usagef("record: --stop-timeout %v: want a positive duration", opts.stopTimeout)
	}
	return p, nil
}

// checkPcap checks the flags of --from-pcap against the others.
func (opts *recordOptions) checkPcap() error {
	if opts.fromPcap == "" {
		if len(opts.ports) > 0 {
			return usagef("record: --port applies to --from-pcap, which is not given")
		}
		return nil
	}
	for _, c := range []struct {
		flag  string
		given bool
	}{
		{"--inbound", len(opts.inbound) > 0}, {"--outbound", opts.outbound != ""}, {"--postgres", opts.postgres != ""},
		{"--ca-dir", opts.caDir != ""}, {"--upstream-ca", opts.upstreamCA != ""}, {"--resolve", len(opts.resolve) > 0},
	} {
		if c.given {
			return usagef("record: %s records live traffic and cannot be combined with --from-pcap", c.flag)
		}
	}
	for _, p := range opts.ports {
		if p < 1 || p > 65535 {
			return usagef("record: --port %d: want a TCP port, 1 to 65535", p)
		}
	}
	return nil
}

// listenAddr checks a LISTEN address: [HOST]:PORT, or a bare port.
func listenAddr(s string) (string, error) {
	if _, err := strconv.ParseUint(s, 10, 16); err == nil {
		s = ":" + s
	}
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		return "", fmt.Errorf("listen address %q is not [HOST]:PORT", s)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return "", fmt.Errorf("listen address %q has no valid port", s)
	}
	return s, nil
}

// targetURL parses the app's URL; a bare host:port means http.
func targetURL(s string) (*url.URL, error) {
	if s != "" && !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("app URL %q: %w", s, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("app URL %q: want http://HOST:PORT or https://HOST:PORT", s)
	}
	return u, nil
}

// errQuitAtOnce reports a stop forced by a second signal.
var errQuitAtOnce = errors.New("record: stopped at once on a second signal; the snapshot keeps what was committed (all but about the last second)")

func recordRun(ctx context.Context, opts *recordOptions) error {
	p, err := opts.plan()
	if err != nil {
		return err
	}
	if _, err := os.Stat(opts.out); err == nil {
		return fmt.Errorf("record: snapshot %s already exists; remove it or choose another --out", opts.out)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("record: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(opts.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if opts.fromPcap != "" {
		return recordPcap(ctx, p, opts, logger)
	}
	rec, err := newRecording(p, opts, logger)
	if err != nil {
		return err
	}

	// The first signal (or the context) stops gracefully, the second at once.
	stop, cancel := context.WithCancel(ctx)
	defer cancel()
	abort := make(chan struct{})
	finished := make(chan struct{})
	defer close(finished)
	go func() {
		n := 0
		for {
			select {
			case <-opts.interrupts:
				if n++; n == 1 {
					cancel()
				} else {
					close(abort)
					return
				}
			case <-finished:
				return
			}
		}
	}()

	rec.start()
	rec.printListening(opts.stdout, opts.out)
	if opts.onReady != nil {
		opts.onReady(rec)
	}
	var serveErr error
	select {
	case <-stop.Done():
	case serveErr = <-rec.errc:
	}
	fmt.Fprintf(opts.stderr, "stopping: finishing %d exchanges in flight, then writing the snapshot (interrupt again to quit at once)\n", rec.inflight.Len())
	done := make(chan error, 1)
	go func() { done <- rec.stop(opts.stopTimeout) }()
	select {
	case err = <-done:
	case <-abort:
		return errQuitAtOnce
	}
	if err == nil {
		err = serveErr
	}
	if err != nil {
		return err
	}
	return rec.printSummary(opts.stdout, opts.out)
}

// recording is one `replay record`: its proxies, all writing through one
// tally to one snapshot writer, and the registry of inbound requests in
// flight they share.
type recording struct {
	writer   *snapshots.Writer
	tally    *tally
	inflight *recorder.Inflight
	logger   *slog.Logger

	inbound  []*inboundServer
	outbound *outboundServer
	pg       *pgServer

	errc chan error // an unexpected end of a server
	wg   sync.WaitGroup
}

type inboundServer struct {
	spec inboundSpec
	l    net.Listener
	srv  *http.Server
}

type outboundServer struct {
	l     net.Listener
	srv   *http.Server
	proxy *recorder.Outbound
	ca    *ca.CA
}

type pgServer struct {
	server string
	tls    pgTLSOptions
	l      net.Listener
	proxy  *sqlcount.Proxy
	cancel context.CancelFunc
	done   chan error
}

// newRecording listens on every address and creates the snapshot; on error
// it leaves nothing open and no file behind.
func newRecording(p *recordPlan, opts *recordOptions, logger *slog.Logger) (r *recording, err error) {
	r = &recording{inflight: recorder.NewInflight(), logger: logger, errc: make(chan error, 8)}
	var listeners []net.Listener
	defer func() {
		if err != nil {
			for _, l := range listeners {
				l.Close()
			}
		}
	}()
	listen := func(what, addr string) (net.Listener, error) {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("record: %s: %w", what, err)
		}
		listeners = append(listeners, l)
		return l, nil
	}
	for _, spec := range p.inbound {
		l, err := listen("--inbound", spec.listen)
		if err != nil {
			return nil, err
		}
		r.inbound = append(r.inbound, &inboundServer{spec: spec, l: l})
	}
	if p.outbound != "" {
		l, err := listen("--outbound", p.outbound)
		if err != nil {
			return nil, err
		}
		r.outbound = &outboundServer{l: l}
	}
	if p.pgListen != "" {
		l, err := listen("--postgres", p.pgListen)
		if err != nil {
			return nil, err
		}
		r.pg = &pgServer{server: p.pgServer, l: l, tls: opts.pgTLS}
	}
	var upstreamTLS *tls.Config
	if opts.upstreamCA != "" {
		if upstreamTLS, err = upstreamTLSConfig(opts.upstreamCA); err != nil {
			return nil, err
		}
	}
	if r.outbound != nil {
		if r.outbound.ca, err = ca.LoadOrCreate(opts.caDir); err != nil {
			return nil, fmt.Errorf("record: %w", err)
		}
	}

	r.writer, err = snapshots.Create(opts.out, snapshots.Options{Rules: p.rules, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	defer func() {
		if err != nil {
			r.writer.Close()
			os.Remove(opts.out)
		}
	}()
	r.tally = newTally(r.writer, p.rules)

	var tracker recorder.RequestTracker
	if r.pg != nil {
		cfg := sqlcount.Config{Upstream: r.pg.server, OnStatement: r.tally.AddStatement, Logger: logger}
		if err := opts.pgTLS.set(&cfg, opts.caDir, r.pg.l.Addr().String()); err != nil {
			return nil, fmt.Errorf("record: --postgres: %w", err)
		}
		r.pg.proxy, err = sqlcount.New(cfg)
		if err != nil {
			return nil, fmt.Errorf("record: --postgres: %w", err)
		}
		tracker = r.pg.proxy
	}
	errLog := slog.NewLogLogger(logger.Handler(), slog.LevelWarn)
	for _, in := range r.inbound {
		h, err := recorder.NewInbound(recorder.InboundConfig{
			Target:        in.spec.target,
			Sink:          r.tally,
			Tracker:       tracker,
			Inflight:      r.inflight,
			BodyLimit:     p.bodyLimit,
			RedactHeaders: opts.redactHeaders,
			Transport:     recorder.NewInboundTransport(upstreamTLS),
			Logger:        logger,
		})
		if err != nil {
			return nil, fmt.Errorf("record: --inbound: %w", err)
		}
		in.srv = &http.Server{Handler: h, ErrorLog: errLog, IdleTimeout: 2 * time.Minute}
	}
	if r.outbound != nil {
		r.outbound.proxy, err = recorder.NewOutbound(recorder.OutboundConfig{
			Sink:          r.tally,
			CA:            r.outbound.ca,
			Inflight:      r.inflight,
			Resolve:       p.resolve,
			UpstreamTLS:   upstreamTLS,
			BodyLimit:     p.bodyLimit,
			RedactHeaders: opts.redactHeaders,
			HTTP2:         opts.outboundHTTP2,
			Logger:        logger,
		})
		if err != nil {
			return nil, fmt.Errorf("record: --outbound: %w", err)
		}
		r.outbound.srv = &http.Server{Handler: r.outbound.proxy, ErrorLog: errLog, IdleTimeout: 2 * time.Minute}
	}
	return r, nil
}

// upstreamTLSConfig trusts the system roots plus the certificates in file.
func upstreamTLSConfig(file string) (*tls.Config, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("record: --upstream-ca: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("record: --upstream-ca %s: no PEM certificate in the file", file)
	}
	return &tls.Config{RootCAs: pool}, nil
}

// start serves every listener.
func (r *recording) start() {
	serve := func(what string, srv *http.Server, l net.Listener) {
		r.wg.Go(func() {
			if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				r.errc <- fmt.Errorf("record: %s %s: %w", what, l.Addr(), err)
			}
		})
	}
	for _, in := range r.inbound {
		serve("inbound", in.srv, in.l)
	}
	if r.outbound != nil {
		serve("outbound", r.outbound.srv, r.outbound.l)
	}
	if r.pg != nil {
		ctx, cancel := context.WithCancel(context.Background())
		r.pg.cancel = cancel
		r.pg.done = make(chan error, 1)
		go func() { r.pg.done <- r.pg.proxy.Serve(ctx, r.pg.l) }()
	}
}

// stop stops accepting, lets the exchanges in flight finish (for at most
// timeout), and closes the snapshot writer. Inbound servers stop first: the
// requests they finish may still call upstreams and the database.
func (r *recording) stop(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, in := range r.inbound {
		wg.Go(func() {
			if err := in.srv.Shutdown(ctx); err != nil {
				in.srv.Close()
			}
		})
	}
	wg.Wait()
	// Upgraded connections are not waited for by Shutdown; their exchanges
	// end when the connections do.
	for r.inflight.Len() > 0 && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	if r.outbound != nil {
		if err := r.outbound.srv.Shutdown(ctx); err != nil {
			r.outbound.srv.Close()
		}
		if err := r.outbound.proxy.Shutdown(ctx); err != nil {
			r.logger.Warn("outbound calls still in progress were cut", "err", err)
		}
	}
	if r.pg != nil {
		r.pg.cancel()
		if err := <-r.pg.done; err != nil && !errors.Is(err, context.Canceled) {
			r.logger.Warn("postgres proxy", "err", err)
		}
	}
	r.wg.Wait()
	if err := r.writer.Close(); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	return nil
}

// printListening says where to send what.
func (r *recording) printListening(w io.Writer, out string) {
	for _, in := range r.inbound {
		fmt.Fprintf(w, "inbound  %s → %s\n", in.l.Addr(), in.spec.target)
	}
	if r.outbound != nil {
		proxy := "http://" + dialable(r.outbound.l.Addr())
		fmt.Fprintf(w, "outbound %s (HTTP_PROXY/HTTPS_PROXY); start the app with:\n", r.outbound.l.Addr())
		fmt.Fprintf(w, "  HTTP_PROXY=%s HTTPS_PROXY=%s", proxy, proxy)
		if bundle, err := r.outbound.ca.BundlePath(); err == nil {
			fmt.Fprintf(w, " SSL_CERT_FILE=%s", bundle)
		} else {
			r.logger.Warn("cannot write the CA bundle", "err", err)
		}
		fmt.Fprintln(w)
	}
	if r.pg != nil {
		fmt.Fprintf(w, "postgres %s%s → %s%s\n", r.pg.l.Addr(), r.pg.tls.clientNote(), r.pg.server, r.pg.tls.upstreamNote())
	}
	fmt.Fprintf(w, "recording to %s; Ctrl-C to stop\n", out)
}

// dialable turns a wildcard listen address into one a local client can dial.
func dialable(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// printSummary prints the exchanges per endpoint and the capture statistics
// as the snapshot file holds them.
func (r *recording) printSummary(w io.Writer, out string) error {
	snap, err := snapshots.Open(out)
	if err != nil {
		return fmt.Errorf("record: reopen: %w", err)
	}
	defer snap.Close()
	cs, err := snap.Stats()
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	rows, statements, attributed := r.tally.summary()
	fmt.Fprintf(w, "recorded %d exchanges and %d SQL statements to %s\n",
		cs.InboundRecorded+cs.OutboundRecorded, cs.Statements, out)
	if len(rows) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprint(tw, "DIRECTION\tSERVICE\tENDPOINT\tEXCHANGES")
		if r.pg != nil {
			fmt.Fprint(tw, "\tSQL/REQUEST")
		}
		fmt.Fprintln(tw)
		for _, row := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d", row.dir, row.service, row.endpoint, row.count)
			if r.pg != nil {
				if row.dir == snapshots.Inbound {
					fmt.Fprintf(tw, "\t%.1f", float64(row.sql)/float64(row.count))
				} else {
					fmt.Fprint(tw, "\t-")
				}
			}
			fmt.Fprintln(tw)
		}
		tw.Flush()
	}
	fmt.Fprintf(w, "capture: inbound %d seen, %d recorded; outbound %d seen, %d recorded",
		cs.InboundSeen, cs.InboundRecorded, cs.OutboundSeen, cs.OutboundRecorded)
	if r.pg != nil {
		fmt.Fprintf(w, "; %d statements, %d attributed to requests", statements, attributed)
	}
	fmt.Fprintln(w)
	return nil
}

// tally is the recording's Sink: it counts exchanges per endpoint (and the
// SQL statements of each) for the summary, and passes everything on to the
// snapshot writer.
type tally struct {
	w     *snapshots.Writer
	rules []snapshots.Rule

	mu         sync.Mutex
	rows       map[tallyKey]*tallyRow
	pending    map[int64]int // statements of inbound exchanges still in flight
	statements int64
	attributed int64
}

type tallyKey struct {
	dir      snapshots.Direction
	service  string
	endpoint string
}

type tallyRow struct {
	tallyKey
	count, sql int64
}

var _ recorder.Sink = (*tally)(nil)

func newTally(w *snapshots.Writer, rules []snapshots.Rule) *tally {
	return &tally{w: w, rules: rules, rows: map[tallyKey]*tallyRow{}, pending: map[int64]int{}}
}

func (t *tally) NewID() int64                    { return t.w.NewID() }
func (t *tally) CountSeen(d snapshots.Direction) { t.w.CountSeen(d) }

func (t *tally) AddExchange(e *snapshots.Exchange) {
	if e.Endpoint == "" {
		e.Endpoint = snapshots.Endpoint(e.Method, e.URL, t.rules)
	}
	k := tallyKey{e.Direction, e.Service, e.Endpoint}
	t.mu.Lock()
	row := t.rows[k]
	if row == nil {
		row = &tallyRow{tallyKey: k}
		t.rows[k] = row
	}
	row.count++
	if n, ok := t.pending[e.ID]; ok && e.Direction == snapshots.Inbound {
		row.sql += int64(n)
		delete(t.pending, e.ID)
	}
	t.mu.Unlock()
	t.w.AddExchange(e)
}

// AddStatement counts s for the exchange it belongs to; sqlcount reports a
// statement before the client sees it complete, so before the exchange ends.
func (t *tally) AddStatement(s *snapshots.Statement) {
	t.mu.Lock()
	t.statements++
	if s.ExchangeID != 0 {
		t.attributed++
		t.pending[s.ExchangeID]++
	}
	t.mu.Unlock()
	t.w.AddStatement(s)
}

// summary returns the rows sorted by direction, service and endpoint.
func (t *tally) summary() (rows []tallyRow, statements, attributed int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range t.rows {
		rows = append(rows, *r)
	}
	slices.SortFunc(rows, func(a, b tallyRow) int {
		return strings.Compare(string(a.dir)+"\x00"+a.service+"\x00"+a.endpoint, string(b.dir)+"\x00"+b.service+"\x00"+b.endpoint)
	})
	return rows, t.statements, t.attributed
}

// recordPcap imports the capture opts.fromPcap into a new snapshot and
// prints the summary; on error it leaves no snapshot behind.
func recordPcap(ctx context.Context, p *recordPlan, opts *recordOptions, logger *slog.Logger) error {
	f, err := os.Open(opts.fromPcap)
	if err != nil {
		return fmt.Errorf("record: --from-pcap: %w", err)
	}
	defer f.Close()
	w, err := snapshots.Create(opts.out, snapshots.Options{Rules: p.rules, Logger: logger})
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	t := newTally(w, p.rules)
	st, err := recorder.ImportPcap(ctx, f, t, recorder.PcapConfig{
		Ports:         opts.ports,
		BodyLimit:     p.bodyLimit,
		RedactHeaders: opts.redactHeaders,
		Logger:        logger,
	})
	if err == nil {
		err = w.Close()
	} else {
		w.Close()
		err = fmt.Errorf("%s: %w", opts.fromPcap, err)
	}
	if err != nil {
		os.Remove(opts.out)
		return fmt.Errorf("record: %w", err)
	}
	if err := (&recording{tally: t}).printSummary(opts.stdout, opts.out); err != nil {
		return err
	}
	printPcapStats(opts.stdout, opts.stderr, st)
	return nil
}

// printPcapStats says what the capture held besides the exchanges, and warns
// when it held none.
func printPcapStats(w, stderr io.Writer, st recorder.PcapStats) {
	ports := make([]string, len(st.Ports))
	for i, p := range st.Ports {
		ports[i] = strconv.Itoa(p)
	}
	fmt.Fprintf(w, "pcap: %d packets (%s); %d HTTP connections", st.Packets, st.Format, st.Connections)
	if len(ports) > 0 {
		fmt.Fprintf(w, " on port %s", strings.Join(ports, ", "))
	}
	for _, n := range []struct {
		n    int64
		what string
	}{
		{st.Incomplete, "exchanges incomplete (see their error)"},
		{st.OrphanResponses, "responses to requests before the capture"},
		{st.Gaps, "gaps where packets were lost"},
		{st.CutPackets, "packets cut short by the capture's snapshot length (capture with -s 0)"},
		{st.TLSConnections, "TLS connections skipped (encrypted)"},
		{st.OtherConnections, "connections skipped (not HTTP/1)"},
	} {
		if n.n > 0 {
			fmt.Fprintf(w, "; %d %s", n.n, n.what)
		}
	}
	fmt.Fprintln(w)
	if st.Exchanges > 0 {
		return
	}
	switch {
	case st.TCPPackets == 0:
		fmt.Fprintln(stderr, "warning: no TCP packet in the capture to or from the ports given")
	case st.TLSConnections > 0:
		fmt.Fprintln(stderr, "warning: no HTTP/1 exchange in the capture, only TLS: capture the plain HTTP between the TLS terminator and the app")
	default:
		fmt.Fprintln(stderr, "warning: no HTTP/1 exchange in the capture")
	}
}
