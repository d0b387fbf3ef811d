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
		Long:  longHelp("inspect"),
		Example: `  replay inspect orders.snap
  replay inspect orders.snap --format json | jq '.endpoints[] | select(.sql_per_request > 10)'`,
		Args: exactArgs(1, "the snapshot"),
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
