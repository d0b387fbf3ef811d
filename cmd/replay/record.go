package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/replaykit/replay/internal/listen"
	"github.com/replaykit/replay/internal/redact"
	"github.com/replaykit/replay/recorder"
)

// recordOptions are the flags of `replay record`.
type recordOptions struct {
	out           string
	inbound       []string
	inboundTLS    inboundTLSFlags
	outbound      string
	outboundHTTP2 bool
	postgres      postgresFlags
	mysql         postgresFlags // named mysql
	caDir         string
	redact        redact.Config
	bodyLimit     int64
	endpoints     []string
	endpointBy    []string
	resolve       []string
	upstreamCA    string
	stopTimeout   time.Duration
	fromPcap      string
	ports         []int
	limits        listen.Limits

	stdout, stderr io.Writer
	// interrupts delivers SIGINT/SIGTERM: the first stops gracefully, the
	// second at once. Nil: no signals (tests cancel the context instead).
	interrupts <-chan os.Signal
	// onReady, when set, is given the session once it listens (tests, demo).
	onReady func(*recorder.Session)
}

// newCmdRecord binds the flags of `replay record` to a recordOptions.
func newCmdRecord(s streams) *cobra.Command {
	opts := &recordOptions{stdout: s.out, stderr: s.err}
	cmd := &cobra.Command{
		Use:   "record --out SNAP [--inbound LISTEN=URL]... [--outbound LISTEN] [--postgres LISTEN=HOST:PORT] [--mysql LISTEN=HOST:PORT] | --from-pcap FILE --out SNAP [--port N]...",
		Short: "Record a service's traffic into a snapshot",
		Long:  longHelp("record"),
		Example: `  replay record --out orders.snap --inbound 127.0.0.1:8081=http://127.0.0.1:8080
  replay record --out orders.snap --inbound 127.0.0.1:8081=http://127.0.0.1:8080 \
      --outbound 127.0.0.1:8082 --postgres 127.0.0.1:6432=127.0.0.1:5432 \
      --endpoint 'GET /orders/{id}/status' --redact-header X-Api-Key
  replay record --out rpc.snap --inbound 127.0.0.1:8081=http://127.0.0.1:8080 --endpoint-by 'json:$.method'
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
	f.StringArrayVar(&opts.inbound, "inbound", nil, "record inbound HTTP and gRPC: `LISTEN=URL` is a reverse proxy on LISTEN to the app at URL, speaking HTTP/1.1 and h2c (repeatable)")
	f.StringVar(&opts.outbound, "outbound", "", "record outbound HTTP(S): a forward proxy on `LISTEN` for the app's HTTP_PROXY/HTTPS_PROXY")
	opts.inboundTLS.addFlags(f)
	f.BoolVar(&opts.outboundHTTP2, "outbound-http2", false, "for --outbound: let apps speak HTTP/2 inside intercepted HTTPS (offered by ALPN; default HTTP/1.1)")
	opts.postgres.addFlags(f)
	opts.mysql = mysqlFlags()
	opts.mysql.addFlags(f)
	opts.limits.AddFlags(f)
	addCADirFlag(f, &opts.caDir)
	opts.redact.AddFlags(f)
	f.Int64Var(&opts.bodyLimit, "body-limit", recorder.DefaultBodyLimit, "record at most `BYTES` of each body (longer ones are marked truncated; 0 records none)")
	f.StringArrayVar(&opts.endpoints, "endpoint", nil, "endpoint template `RULE` that wins over the computed ones, e.g. 'GET /orders/{id}/status' (repeatable)")
	addEndpointByFlag(f, &opts.endpointBy)
	f.StringArrayVar(&opts.resolve, "resolve", nil, "for --outbound: `HOST:PORT=ADDR` dials ADDR for calls to HOST:PORT (repeatable)")
	f.StringVar(&opts.upstreamCA, "upstream-ca", "", "also trust the CA certificates in PEM `FILE` when connecting to HTTPS upstreams")
	f.DurationVar(&opts.stopTimeout, "stop-timeout", 10*time.Second, "on stop, how long to wait for the exchanges in flight")
	f.StringVar(&opts.fromPcap, "from-pcap", "", "import the HTTP exchanges in the packet capture `FILE` (pcap or pcapng) instead of recording live")
	f.IntSliceVar(&opts.ports, "port", nil, "with --from-pcap: record the traffic to server port `N` (repeatable; default: every port that carries HTTP)")
	return cmd
}

// errQuitAtOnce reports a stop forced by a second signal.
var errQuitAtOnce = errors.New("record: stopped at once on a second signal; the snapshot keeps what was committed (all but about the last second)")

// recordRun records the app around which opts put proxies until ctx ends or
// an interrupt comes (or imports the capture of --from-pcap), then prints
// the summary.
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
	s, authority, err := newSession(p, opts, logger)
	if err != nil {
		return err
	}
	stop, abort, release := watchInterrupts(ctx, opts.interrupts)
	defer release()

	s.Start()
	printListening(opts.stdout, s, p, opts, authority, logger)
	if opts.onReady != nil {
		opts.onReady(s)
	}
	var serveErr error
	select {
	case <-stop.Done():
	case err := <-s.Err():
		serveErr = fmt.Errorf("record: %w", err)
	}
	fmt.Fprintf(opts.stderr, "stopping: finishing %s in flight, then writing the snapshot (interrupt again to quit at once)\n", plural(int64(s.InFlight()), "exchange"))
	done := make(chan error, 1)
	go func() { done <- s.Stop(opts.stopTimeout) }()
	select {
	case err = <-done:
	case <-abort:
		return errQuitAtOnce
	}
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	if serveErr != nil {
		return serveErr
	}
	// ctx ended to stop the recording; the summary still reads the snapshot.
	return printSummary(context.WithoutCancel(ctx), opts.stdout, opts.stderr, opts.out, s.Summary(), p.pgListen != "" || p.myListen != "")
}

// watchInterrupts turns interrupts into a stop: the first (or the end of
// ctx) ends the returned context, the second closes abort. release stops
// watching.
func watchInterrupts(ctx context.Context, interrupts <-chan os.Signal) (stop context.Context, abort <-chan struct{}, release func()) {
	stop, cancel := context.WithCancel(ctx)
	aborted := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		n := 0
		for {
			select {
			case <-interrupts:
				if n++; n == 1 {
					cancel()
				} else {
					close(aborted)
					return
				}
			case <-finished:
				return
			}
		}
	}()
	return stop, aborted, func() {
		close(finished)
		cancel()
	}
}
