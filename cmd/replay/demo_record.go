package main

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/replaykit/replay/examples/orders/app"
	"github.com/replaykit/replay/internal/ca"
	"github.com/replaykit/replay/internal/pgcluster"
	"github.com/replaykit/replay/internal/syncbuf"
	"github.com/replaykit/replay/recorder"
	"github.com/replaykit/replay/replayer"
)

// demoRecord records the orders service with replay record's own machinery:
// the proxies listen first, then the app starts behind them, so its
// connection pool goes through the SQL counter.
func demoRecord(ctx context.Context, opts *demoOptions, authority *ca.CA, pg *pgcluster.Cluster, standAddr, snap string) error {
	port, err := demoFreePort()
	if err != nil {
		return err
	}
	rctx, stopRecording := context.WithCancel(ctx)
	defer stopRecording()
	ready := make(chan *recorder.Session, 1)
	var summary strings.Builder
	var notices syncbuf.Buffer // the recorder's goroutines write it
	ropts := &recordOptions{
		out:         snap,
		inbound:     []string{"127.0.0.1:0=http://127.0.0.1:" + strconv.Itoa(port)},
		outbound:    "127.0.0.1:0",
		postgres:    postgresFlags{spec: "127.0.0.1:0=" + pg.Addr()},
		caDir:       authority.Dir(),
		bodyLimit:   recorder.DefaultBodyLimit,
		resolve:     []string{demoCatalog + "=" + standAddr},
		upstreamCA:  authority.CertPath(),
		stopTimeout: 10 * time.Second,
		stdout:      &summary,
		stderr:      &notices,
		onReady:     func(s *recorder.Session) { ready <- s },
	}
	done := make(chan error, 1)
	go func() { done <- recordRun(rctx, ropts) }()
	var rec *recorder.Session
	select {
	case rec = <-ready:
	case err := <-done:
		return fmt.Errorf("demo: record: %w (%s)", err, strings.TrimSpace(notices.String()))
	}
	bundle, err := authority.BundlePath()
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	sqlAddr := dialable(rec.PostgresAddr())
	proc, err := replayer.StartBuild(ctx, replayer.Build{
		Cmd:     shellQuote(opts.self) + " demo orders",
		Port:    port,
		LogPath: filepath.Join(opts.out, "record-app.log"),
		Env: []string{
			"APP_SLOW=0",
			"CATALOG_URL=https://" + demoCatalogHost,
			"DATABASE_URL=" + strings.Replace(pg.URL("postgres"), pg.Addr(), sqlAddr, 1),
		},
	}, replayer.Wiring{Proxy: dialable(rec.OutboundAddr()), CABundle: bundle, CACert: authority.CertPath()})
	if err != nil {
		stopRecording()
		<-done
		return fmt.Errorf("demo: start the orders service: %w", err)
	}
	inbound := "http://" + dialable(rec.InboundAddrs()[0])
	fmt.Fprintf(opts.stdout, "orders service APP_SLOW=0 on %s, recorded through %s\n", proc.URL(), inbound)
	client := &http.Client{Timeout: 30 * time.Second}
	n, trafficErr := app.Traffic(ctx, inbound, client, opts.rounds)
	proc.Stop()
	stopRecording()
	recErr := <-done
	if trafficErr != nil {
		return fmt.Errorf("demo: send traffic: %w", trafficErr)
	}
	if recErr != nil {
		return fmt.Errorf("demo: record: %w", recErr)
	}
	// The listening lines are for a user who starts the app; the demo did.
	out := summary.String()
	if i := strings.Index(out, "\nrecorded "); i >= 0 {
		out = out[i+1:]
	}
	fmt.Fprintf(opts.stdout, "sent %d requests\n%s", n, out)
	return nil
}
