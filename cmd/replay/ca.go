package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/replaykit/replay/internal/ca"
	"github.com/replaykit/replay/internal/shell"
	"github.com/replaykit/replay/report"
)

type caOptions struct {
	dir     string
	formats []string
	stdout  io.Writer
}

func newCmdCA(s streams) *cobra.Command {
	opts := &caOptions{stdout: s.out}
	cmd := &cobra.Command{
		Use:   "ca [--ca-dir DIR] [--format text|json|env]",
		Short: "Show replay's CA and how to make an app trust it",
		Long:  longHelp("ca"),
		Example: `  replay ca
  eval "$(replay ca --format env)"     # trust it in this shell
  replay ca --ca-dir ./ca --format json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			return caRun(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	addCADirFlag(f, &opts.dir)
	f.StringArrayVar(&opts.formats, "format", nil, "output `FORMAT`: text, json, or env (just the export lines; default text)")
	return cmd
}

func caRun(ctx context.Context, opts *caOptions) error {
	format, err := report.OneFormat(opts.formats, "text", "json", "env")
	if err != nil {
		return usagef("ca: %v", err)
	}
	dir := opts.dir
	if dir == "" {
		d, err := ca.DefaultDir()
		if err != nil {
			return fmt.Errorf("ca: %w", err)
		}
		dir = d
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs // the printed lines must work from any directory
	}
	_, statErr := os.Stat(filepath.Join(dir, ca.CertFile))
	c, err := ca.LoadOrCreate(dir)
	if err != nil {
		return fmt.Errorf("ca: %w", err)
	}
	info, err := ca.Describe(c)
	if err != nil {
		return fmt.Errorf("ca: %w", err)
	}
	info.Created = errors.Is(statErr, fs.ErrNotExist)
	switch format {
	case "json":
		return info.WriteJSON(opts.stdout)
	case "env":
		return info.WriteEnv(opts.stdout)
	}
	return info.WriteText(opts.stdout)
}

// shellQuote quotes s for a POSIX shell when it holds anything but safe
// characters.
func shellQuote(s string) string { return shell.Quote(s) }
