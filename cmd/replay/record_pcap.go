package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/replaykit/replay/recorder"
	"github.com/replaykit/replay/snapshots"
)

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
	t := recorder.NewTally(w, p.rules)
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
	if err := printSummary(opts.stdout, opts.out, t.Summary(), false); err != nil {
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
