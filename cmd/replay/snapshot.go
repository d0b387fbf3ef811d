package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/replaykit/replay/internal/redact"
	"github.com/replaykit/replay/report"
	"github.com/replaykit/replay/snapshots"
)

func newCmdSnapshot(s streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Export a snapshot to JSON Lines or HAR, or import one",
		Long:  longHelp("snapshot"),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("snapshot: unknown command %q (want export or import)", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return usagef("snapshot: missing command (want export or import)")
		},
	}
	cmd.AddCommand(newCmdSnapshotExport(s), newCmdSnapshotImport(s))
	return cmd
}

type exportOptions struct {
	snapshot string
	formats  []string
	format   string
	output   string // "" or "-": stdout
	stdout   io.Writer
}

func newCmdSnapshotExport(s streams) *cobra.Command {
	opts := &exportOptions{stdout: s.out}
	cmd := &cobra.Command{
		Use:   "export SNAP --format jsonl|har [-o FILE]",
		Short: "Write a snapshot as JSON Lines or HAR",
		Long:  longHelp("snapshot-export"),
		Example: `  replay snapshot export orders.snap --format har -o orders.har
  replay snapshot export orders.snap --format jsonl | grep '"type":"statement"'`,
		Args: exactArgs(1, "the snapshot"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.snapshot = args[0]
			name, err := report.OneFormat(opts.formats)
			f, ferr := snapshots.ParseFormat(name, opts.output)
			if opts.format = string(f); cmp.Or(err, ferr) != nil {
				return usagef("snapshot export: %v", cmp.Or(err, ferr))
			}
			return exportRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringArrayVar(&opts.formats, "format", nil, "`format` to write: jsonl or har")
	cmd.Flags().StringVarP(&opts.output, "output", "o", "", "`FILE` to write (default standard output)")
	return cmd
}

func exportRun(ctx context.Context, opts *exportOptions) error {
	s, err := snapshots.Open(opts.snapshot)
	if err != nil {
		return err
	}
	defer s.Close()
	if opts.output == "" || opts.output == "-" {
		return snapshots.Export(ctx, s, opts.stdout, snapshots.Format(opts.format))
	}
	return snapshots.ExportFile(ctx, s, opts.output, snapshots.Format(opts.format))
}

type importOptions struct {
	input     string // "-": stdin
	formats   []string
	format    string
	out       string
	endpoints []string
	by        []string // --endpoint-by
	direction string
	redact    redact.Config
	stdin     io.Reader
	stdout    io.Writer
	stderr    io.Writer
}

func newCmdSnapshotImport(s streams) *cobra.Command {
	opts := &importOptions{stdin: s.in, stdout: s.out, stderr: s.err}
	cmd := &cobra.Command{
		Use:   "import FILE --format jsonl|har --out SNAP [--endpoint RULE]... [--endpoint-by json:$.PATH]... [--direction inbound|outbound]",
		Short: "Create a snapshot from JSON Lines or a HAR file",
		Long:  longHelp("snapshot-import"),
		Example: `  replay snapshot import session.har --out session.snap
  replay snapshot import - --format jsonl --out copy.snap < orders.jsonl
  replay snapshot import shop.har --out shop.snap --endpoint 'GET /api/orders/{id}'
  replay snapshot import catalog-api.har --direction outbound --out catalog.snap`,
		Args: exactArgs(1, "the file to import, or - for stdin"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.input = args[0]
			name, err := report.OneFormat(opts.formats)
			f, ferr := snapshots.ParseFormat(name, opts.input)
			if opts.format = string(f); cmp.Or(err, ferr) != nil {
				return usagef("snapshot import: %v", cmp.Or(err, ferr))
			}
			if opts.out == "" {
				return usagef("snapshot import: --out SNAP is required")
			}
			switch {
			case opts.direction != "" && opts.direction != "inbound" && opts.direction != "outbound":
				return usagef("snapshot import: unknown --direction %q (want inbound or outbound)", opts.direction)
			case opts.direction != "" && opts.format != "har":
				return usagef("snapshot import: --direction applies to HAR files only (JSON Lines records carry theirs)")
			}
			return importRun(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&opts.formats, "format", nil, "`format` of FILE: jsonl or har")
	f.StringVar(&opts.out, "out", "", "snapshot `SNAP` to create")
	f.StringArrayVar(&opts.endpoints, "endpoint", nil, "endpoint `RULE` such as 'GET /orders/{id}/status' (METHOD may be *); repeatable")
	addEndpointByFlag(f, &opts.by)
	f.StringVar(&opts.direction, "direction", "", "`direction` of HAR entries from browsers and other tools: inbound (default) or outbound")
	opts.redact.AddFlags(f)
	return cmd
}

// maxRejectsNamed bounds the entries an import names on stderr; the rest
// are counted.
const maxRejectsNamed = 20

func importRun(ctx context.Context, opts *importOptions) error {
	rules, err := snapshots.ParseRules(opts.endpoints)
	if err != nil {
		return usageError{err}
	}
	by, err := bodyRules("snapshot import", opts.by)
	if err != nil {
		return err
	}
	rules = append(rules, by...)
	if err := opts.redact.Check("snapshot import", opts.stderr); err != nil {
		return usageError{err}
	}
	in := opts.stdin
	if opts.input != "-" {
		f, err := os.Open(opts.input)
		if err != nil {
			return fmt.Errorf("snapshot import: %w", err)
		}
		defer f.Close()
		in = f
	}
	w, err := snapshots.Create(opts.out, snapshots.Options{Rules: rules, Redactor: opts.redact.Redactor()})
	if err != nil {
		return err
	}
	rejects := &snapshots.RejectLog{W: opts.stderr, Prefix: "replay snapshot import: ", Max: maxRejectsNamed}
	err = snapshots.Import(ctx, in, w, snapshots.Format(opts.format), snapshots.ImportOptions{Direction: snapshots.Direction(opts.direction), Rejected: rejects.Add})
	rejects.Done()
	if err := w.CloseOrRemove(err); err != nil {
		return fmt.Errorf("snapshot import %s: %w", opts.input, err)
	}
	st := w.Stats()
	fmt.Fprintf(opts.stdout, "imported %s (%d inbound, %d outbound) and %s into %s; %s rejected\n",
		plural(st.InboundRecorded+st.OutboundRecorded, "exchange"), st.InboundRecorded, st.OutboundRecorded,
		plural(st.Statements, "SQL statement"), opts.out, entries(rejects.N))
	return nil
}

// entries is n import entries: "1 entry", "3 entries".
func entries(n int) string {
	if n == 1 {
		return "1 entry"
	}
	return fmt.Sprintf("%d entries", n)
}
