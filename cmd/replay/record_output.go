package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/internal/ca"
	"github.com/replaykit/replay/recorder"
	"github.com/replaykit/replay/snapshots"
)

// printListening says where to send what; authority is replay's CA when
// --outbound is given.
func printListening(w io.Writer, s *recorder.Session, p *recordPlan, opts *recordOptions, authority *ca.CA, logger *slog.Logger) {
	for i, addr := range s.InboundAddrs() {
		speaks := "HTTP/1.1, h2c"
		if opts.inboundTLS.used() {
			speaks = "TLS: h2, HTTP/1.1"
		}
		fmt.Fprintf(w, "inbound  %s (%s) → %s\n", addr, speaks, p.inbound[i].target)
	}
	if addr := s.OutboundAddr(); addr != nil {
		proxy := "http://" + dialable(addr)
		fmt.Fprintf(w, "outbound %s (HTTP_PROXY/HTTPS_PROXY); start the app with:\n", addr)
		fmt.Fprintf(w, "  HTTP_PROXY=%s HTTPS_PROXY=%s", proxy, proxy)
		if bundle, err := authority.BundlePath(); err == nil {
			fmt.Fprintf(w, " SSL_CERT_FILE=%s", bundle)
		} else {
			logger.Warn("cannot write the CA bundle", "err", err)
		}
		fmt.Fprintln(w)
	}
	if addr := s.PostgresAddr(); addr != nil {
		fmt.Fprintf(w, "postgres %s%s → %s%s\n", addr, opts.postgres.tls.clientNote(), p.pgServer, opts.postgres.tls.upstreamNote())
	}
	if addr := s.MySQLAddr(); addr != nil {
		fmt.Fprintf(w, "mysql %s%s → %s%s\n", addr, opts.mysql.tls.clientNote(), p.myServer, opts.mysql.tls.upstreamNote())
	}
	fmt.Fprintf(w, "recording to %s; Ctrl-C to stop\n", opts.out)
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
// as the snapshot file out holds them; withSQL adds the SQL columns.
//
// A snapshot of no exchange is kept (nothing recorded is lost) and exits
// 0, but warn (when not nil) is told so: there is nothing in it to replay.
func printSummary(ctx context.Context, w, warn io.Writer, out string, sum recorder.TallySummary, withSQL bool) error {
	snap, err := snapshots.Open(out)
	if err != nil {
		return fmt.Errorf("record: reopen: %w", err)
	}
	defer snap.Close()
	cs, err := snap.Stats()
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	if withSQL {
		if err := estimateTally(ctx, snap, &sum); err != nil {
			return fmt.Errorf("record: %w", err)
		}
	}
	if err := sum.WriteText(w, out, cs, withSQL); err != nil {
		return err
	}
	if warn != nil && cs.InboundRecorded+cs.OutboundRecorded == 0 {
		fmt.Fprintf(warn, "replay: warning: the snapshot %s holds 0 exchanges: no request was recorded (%d inbound and %d outbound seen); there is nothing in it to replay\n",
			out, cs.InboundSeen, cs.OutboundSeen)
	}
	return nil
}

// estimateTally fills the SQL per request of sum's inbound rows from the
// snapshot, exact or estimated (analyzer.EstimateSQL).
func estimateTally(ctx context.Context, snap *snapshots.Snapshot, sum *recorder.TallySummary) error {
	spans, h, err := snap.SQLSpans(ctx)
	if err != nil {
		return err
	}
	ests := map[string]analyzer.SQLEstimate{}
	for _, e := range analyzer.EstimateSQL(spans, h) {
		ests[e.Key] = e
	}
	for i := range sum.Rows {
		row := &sum.Rows[i]
		if e, ok := ests[snapshots.InventoryKey(row.Service, row.Endpoint)]; ok && row.Direction == snapshots.Inbound {
			row.SQLPerRequest, row.SQLMethod, row.SQLMargin = e.PerRequest, e.Method, e.Margin
		}
	}
	return nil
}
