package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/replaykit/replay/report"
	"github.com/replaykit/replay/snapshots"
)

type inspectOptions struct {
	snapshot string
	format   string
	stdout   io.Writer
}

func newCmdInspect(s streams) *cobra.Command {
	opts := &inspectOptions{stdout: s.out}
	cmd := &cobra.Command{
		Use:   "inspect SNAP [--format text|json]",
		Short: "Show what a snapshot holds: endpoints, counts, services, statements",
		Long: `inspect summarizes a snapshot: its exchanges per direction, service and
endpoint, with their count, status classes (2xx/3xx/4xx/5xx/failed), recorded
latency (average and p95, in milliseconds) and the SQL statements per request
of inbound endpoints; then the most frequent statement fingerprints and the
capture statistics (requests seen against requests recorded).

The file is opened read-only, so a snapshot can be inspected while replay
record is still writing it.`,
		Example: `  replay inspect orders.snap
  replay inspect orders.snap --format json | jq '.endpoints[] | select(.sql_per_request > 10)'`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("inspect: want one snapshot file (SNAP), got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.snapshot = args[0]
			if opts.format != "text" && opts.format != "json" {
				return usagef("inspect: unknown --format %q (want text or json)", opts.format)
			}
			return inspectRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.format, "format", "text", "output `format`: text or json")
	return cmd
}

func inspectRun(ctx context.Context, opts *inspectOptions) error {
	s, err := snapshots.Open(opts.snapshot)
	if err != nil {
		return err
	}
	defer s.Close()
	inv, err := snapshots.Inspect(ctx, s)
	if err != nil {
		return err
	}
	if opts.format == "json" {
		enc := json.NewEncoder(opts.stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(inv)
	}
	return writeInventory(opts.stdout, inv)
}

// writeInventory prints inv as aligned tables.
func writeInventory(w io.Writer, inv *snapshots.Inventory) error {
	fmt.Fprintf(w, "snapshot %s: %d exchanges (%d inbound, %d outbound), %d SQL statements",
		inv.Path, inv.Exchanges, inv.Inbound, inv.Outbound, inv.Statements)
	if inv.Unattributed > 0 {
		fmt.Fprintf(w, " (%d not attributed to a request)", inv.Unattributed)
	}
	fmt.Fprintln(w)
	c := inv.Capture
	fmt.Fprintf(w, "captured: inbound %d of %d seen, outbound %d of %d seen, %d statements\n",
		c.InboundRecorded, c.InboundSeen, c.OutboundRecorded, c.OutboundSeen, c.Statements)
	if len(inv.Endpoints) > 0 {
		t := report.NewTable([]string{"DIRECTION", "SERVICE", "ENDPOINT", "COUNT", "2XX", "3XX", "4XX", "5XX", "FAILED", "AVG MS", "P95 MS", "SQL/REQ"},
			3, 4, 5, 6, 7, 8, 9, 10, 11)
		for _, e := range inv.Endpoints {
			sql := "-" // statements belong to inbound requests
			if e.Direction == snapshots.Inbound {
				sql = fmtFigure(e.SQLPerRequest)
			}
			st := e.Status
			t.Add(string(e.Direction), e.Service, e.Endpoint, fmtCount(e.Count),
				fmtCount(st.Success+st.Informational), fmtCount(st.Redirect), fmtCount(st.ClientError),
				fmtCount(st.ServerError), fmtCount(st.Failed), fmtFigure(e.AvgMS), fmtFigure(e.P95MS), sql)
		}
		fmt.Fprintln(w)
		if err := t.Write(w); err != nil {
			return err
		}
	}
	if len(inv.Fingerprints) > 0 {
		t := report.NewTable([]string{"COUNT", "TOTAL MS", "STATEMENT"}, 0, 1)
		for _, f := range inv.Fingerprints {
			t.Add(fmtCount(f.Count), fmtFigure(f.TotalMS), f.Fingerprint)
		}
		fmt.Fprintln(w)
		if err := t.Write(w); err != nil {
			return err
		}
	}
	return nil
}

func fmtCount(n int64) string { return strconv.FormatInt(n, 10) }

// fmtFigure formats a figure with at most three decimals and no trailing zeros.
func fmtFigure(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
