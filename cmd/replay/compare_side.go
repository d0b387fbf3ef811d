package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/replaykit/replay/internal/ca"
	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/snapshots"
)

// compareSideEnv is what replay runs around one side: its mock, its SQL
// counter and its build.
type compareSideEnv struct {
	harness
	side    *compareSide
	build   *replayer.Process
	logPath string
	target  string
}

// close stops the build (if still running), the mock and the SQL counter.
func (e *compareSideEnv) close() {
	if e.build != nil {
		e.build.Stop()
	}
	e.harness.close()
}

// compareCA loads replay's CA when upstreams are mocked; nil otherwise.
func compareCA(opts *compareOptions) (*ca.CA, error) {
	if len(opts.mocks) == 0 {
		return nil, nil
	}
	c, err := ca.LoadOrCreate(opts.caDir)
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	return c, nil
}

// startCompareSideEnv starts one side's mock and SQL counter. On error the
// returned env (if any) holds what was started, for the caller to close.
func startCompareSideEnv(ctx context.Context, opts *compareOptions, su *compareSetup, side *compareSide, pgListen string, authority *ca.CA, outbound []*snapshots.Exchange) (*compareSideEnv, error) {
	e := &compareSideEnv{side: side}
	if len(opts.mocks) > 0 {
		var services []string
		if !slices.Contains(opts.mocks, "all") {
			services = opts.mocks
		}
		if err := e.startMock(outbound, services, opts.onMiss, opts.mockTiming, authority, "127.0.0.1:0"); err != nil {
			return e, fmt.Errorf("compare: %s mock: %w", side.name, err)
		}
		var err error
		if e.wiring.CABundle, err = authority.BundlePath(); err != nil {
			return e, fmt.Errorf("compare: %w", err)
		}
	}
	if su.pgServer != "" {
		if err := e.startSQLCounter(ctx, su.pgServer, pgListen, &opts.pgTLS, opts.caDir); err != nil {
			return e, fmt.Errorf("compare: %s sqlcount: %w", side.name, err)
		}
	}
	return e, nil
}

// compareURLNotice tells the user how to start a build given as a URL.
func compareURLNotice(w io.Writer, e *compareSideEnv, su *compareSetup) {
	var parts []string
	if e.mockAddr != "" {
		services := strings.Join(e.mock.Services(), ", ")
		if services == "" {
			services = "no recorded upstream"
		}
		fmt.Fprintf(w, "%s mock: answering %s on %s\n", e.side.name, services, e.mockAddr)
		parts = append(parts, "HTTP_PROXY=http://"+e.mockAddr, "HTTPS_PROXY=http://"+e.mockAddr, "NO_PROXY=localhost,127.0.0.1,::1",
			"SSL_CERT_FILE="+e.wiring.CABundle, "NODE_EXTRA_CA_CERTS="+e.wiring.CACert)
	}
	if e.sqlAddr != "" {
		fmt.Fprintf(w, "%s sqlcount: counting SQL on %s in front of %s; point the %s's database at %s\n", e.side.name, e.sqlAddr, su.pgServer, e.side.name, e.sqlAddr)
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "start the %s build with:\n  %s\n", e.side.name, strings.Join(parts, " "))
	}
	if len(parts) > 0 || e.sqlAddr != "" {
		fmt.Fprintf(w, "waiting for the %s at %s…\n", e.side.name, e.side.url)
	}
}
