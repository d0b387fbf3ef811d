package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/report"
	"github.com/replaykit/replay/snapshots"
)

type inspectOptions struct {
	snapshot string
	formats  []string
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
of inbound endpoints (exact, or estimated with a margin when requests
overlapped and statements could not be attributed: shown "~2.25±0.1", in JSON
sql_method "estimated" and sql_margin); then the most frequent statement fingerprints and the
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
			var err error
			if opts.format, err = report.OneFormat(opts.formats, "text", "json"); err != nil {
				return usagef("inspect: %v", err)
			}
			return inspectRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringArrayVar(&opts.formats, "format", nil, "output `FORMAT`: text or json (default text)")
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
	if err := analyzer.InventorySQL(ctx, s, inv); err != nil {
		return err
	}
	if opts.format == "json" {
		return report.InventoryJSON(opts.stdout, inv)
	}
	return report.InventoryText(opts.stdout, inv)
}
