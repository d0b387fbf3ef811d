package demo

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/replaykit/replay/examples/orders/app"
	"github.com/replaykit/replay/internal/ca"
	"github.com/replaykit/replay/internal/pgcluster"
	"github.com/replaykit/replay/internal/shell"
	"github.com/replaykit/replay/recorder"
	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/snapshots"
	"github.com/replaykit/replay/sqlcount"
)

// stopTimeout bounds the wait for the exchanges in flight when the
// recording stops, as replay record's default.
const stopTimeout = 10 * time.Second

var _ recorder.PostgresProxy = (*sqlcount.Proxy)(nil)

// record records the orders service (APP_SLOW=0) while app.Traffic runs
// against it. The proxies listen first, then the app starts behind them,
// so that its connection pool goes through the SQL counter.
func (r *runner) record(ctx context.Context, authority *ca.CA, pg *pgcluster.Cluster, standAddr string) (Recording, error) {
	rec := Recording{Snapshot: filepath.Join(r.cfg.Dir, SnapshotFile)}
	port, err := freePort()
	if err != nil {
		return rec, err
	}
	s, err := recorder.NewSession(r.sessionConfig(rec.Snapshot, port, authority, pg.Addr(), standAddr))
	if err != nil {
		return rec, fmt.Errorf("demo: record: %w", err)
	}
	s.Start()
	rec.Requests, err = r.sendTraffic(ctx, s, port, authority, pg)
	stopErr := s.Stop(stopTimeout)
	if err != nil {
		return rec, err
	}
	if stopErr != nil {
		return rec, fmt.Errorf("demo: record: %w", stopErr)
	}
	select {
	case err := <-s.Err():
		return rec, fmt.Errorf("demo: record: %w", err)
	default:
	}
	rec.Summary = s.Summary()
	return rec, nil
}

// sessionConfig is the recording of the app on port: inbound in front of
// it, outbound with the catalog's name resolved to the stand-in, and a SQL
// counter in front of the database at dbAddr.
func (r *runner) sessionConfig(snap string, port int, authority *ca.CA, dbAddr, standAddr string) recorder.SessionConfig {
	target := &url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(port)}
	logger := r.cfg.Logger
	return recorder.SessionConfig{
		Snapshot: snap,
		Inbound:  []recorder.SessionInbound{{Listen: "127.0.0.1:0", Target: target}},
		Outbound: &recorder.SessionOutbound{
			Listen:  "127.0.0.1:0",
			CA:      authority,
			Resolve: map[string]string{catalogAddr: standAddr},
		},
		Postgres: &recorder.SessionPostgres{
			Listen: "127.0.0.1:0",
			New: func(_ net.Addr, onStatement func(*snapshots.Statement)) (recorder.PostgresProxy, error) {
				proxy, err := sqlcount.New(sqlcount.Config{Upstream: dbAddr, OnStatement: onStatement, Logger: logger})
				if err != nil {
					return nil, err // not a nil *Proxy in a non-nil interface
				}
				return proxy, nil
			},
		},
		// The stand-in's certificate is from replay's CA.
		UpstreamTLS: &tls.Config{RootCAs: authority.Pool()},
		Logger:      logger,
	}
}

// sendTraffic starts the app on port behind the recording session s, sends
// it the demo's request mix through s and stops it; it returns the number
// of requests sent.
func (r *runner) sendTraffic(ctx context.Context, s *recorder.Session, port int, authority *ca.CA, pg *pgcluster.Cluster) (int, error) {
	bundle, err := authority.BundlePath()
	if err != nil {
		return 0, fmt.Errorf("demo: %w", err)
	}
	dbURL := strings.Replace(pg.URL("postgres"), pg.Addr(), s.PostgresAddr().String(), 1)
	proc, err := replayer.StartBuild(ctx, replayer.Build{
		Cmd:     shell.Quote(r.cfg.Replay) + " demo orders",
		Port:    port,
		LogPath: filepath.Join(r.cfg.Dir, "record-app.log"),
		Env:     []string{"APP_SLOW=0", "CATALOG_URL=https://" + CatalogHost, "DATABASE_URL=" + dbURL},
	}, replayer.Wiring{Proxy: s.OutboundAddr().String(), CABundle: bundle, CACert: authority.CertPath()})
	if err != nil {
		return 0, fmt.Errorf("demo: start the orders service: %w", err)
	}
	defer proc.Stop()
	inbound := "http://" + s.InboundAddrs()[0].String()
	fmt.Fprintf(r.out, "orders service APP_SLOW=0 on %s, recorded through %s\n", proc.URL(), inbound)
	n, err := app.Traffic(ctx, inbound, &http.Client{Timeout: 30 * time.Second}, r.cfg.Rounds)
	if err != nil {
		return n, fmt.Errorf("demo: send traffic: %w", err)
	}
	fmt.Fprintf(r.out, "sent %d requests\n", n)
	return n, nil
}

// freePort returns a loopback port that was free a moment ago: the app's,
// which the inbound proxy must know before the app starts.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("demo: pick a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
