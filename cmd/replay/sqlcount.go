package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"

	"github.com/spf13/cobra"

	"github.com/replaykit/replay/internal/listen"
	"github.com/replaykit/replay/sqlcount"
)

type sqlcountOptions struct {
	listen   string
	upstream string
	jsonPath string
	protocol string
	caDir    string
	tls      pgTLSOptions
	limits   listen.Limits

	out, errOut io.Writer
	// onListen, when set, is told the address listened on (tests).
	onListen func(net.Addr)
}

func newCmdSQLCount(s streams) *cobra.Command {
	opts := &sqlcountOptions{out: s.out, errOut: s.err}
	cmd := &cobra.Command{
		Use:   "sqlcount --listen ADDR --upstream HOST:PORT [--protocol postgres|mysql] [--json FILE]",
		Short: "Count, time and fingerprint the SQL statements passing to a PostgreSQL or MySQL server",
		Long:  longHelp("sqlcount"),
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.listen == "" {
				return usagef("sqlcount: --listen ADDR is required")
			}
			if opts.upstream == "" {
				return usagef("sqlcount: --upstream HOST:PORT is required")
			}
			if _, _, err := net.SplitHostPort(opts.upstream); err != nil {
				return usagef("sqlcount: --upstream %q: want HOST:PORT", opts.upstream)
			}
			if err := opts.tls.validate("sqlcount", true); err != nil {
				return err
			}
			if _, err := sqlcount.Wire(opts.protocol); err != nil {
				return usagef("sqlcount: --protocol %q: want %s", opts.protocol, strings.Join(sqlcount.Protocols, " or "))
			}
			return sqlcountRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.listen, "listen", "", "address to accept the database's clients on, e.g. 127.0.0.1:6432")
	cmd.Flags().StringVar(&opts.upstream, "upstream", "", "host:port of the database server")
	cmd.Flags().StringVar(&opts.protocol, "protocol", sqlcount.Postgres, "the database's wire `PROTOCOL`: postgres (PostgreSQL) or mysql (MySQL, MariaDB)")
	cmd.Flags().StringVar(&opts.jsonPath, "json", "", "write the totals to `FILE` as JSON on exit")
	addCADirFlag(cmd.Flags(), &opts.caDir)
	opts.tls.addFlags(cmd.Flags(), "")
	opts.limits.AddSQLFlags(cmd.Flags())
	return cmd
}

func sqlcountRun(ctx context.Context, opts *sqlcountOptions) error {
	cfg := sqlcount.Config{Upstream: opts.upstream, Protocol: opts.protocol, Logger: slog.New(slog.NewTextHandler(opts.errOut, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	cfg.StartupTimeout, cfg.IdleTimeout = opts.limits.SQLTimeouts()
	if err := opts.tls.set(&cfg, opts.caDir, opts.listen); err != nil {
		return fmt.Errorf("sqlcount: %w", err)
	}
	sqlcount.OwnProcess(&cfg)
	p, err := sqlcount.New(cfg)
	if err != nil {
		return err
	}
	warn := func(err error) { fmt.Fprintf(opts.errOut, "replay: warning: %v\n", err) }
	l, err := opts.limits.Listen(opts.listen, "SQL counter", "it forwards connections to the database", cfg.Logger, warn)
	if err != nil {
		return fmt.Errorf("sqlcount: %w", err)
	}
	fmt.Fprintf(opts.out, "sqlcount: listening on %s%s, forwarding to %s%s; stop with Ctrl-C\n", l.Addr(), opts.tls.clientNote(), opts.upstream, opts.tls.upstreamNote())
	if opts.onListen != nil {
		opts.onListen(l.Addr())
	}
	if err := p.Serve(ctx, l); err != nil {
		return err
	}
	st := p.Stats()
	if err := st.WriteTable(opts.out); err != nil {
		return err
	}
	if opts.jsonPath != "" {
		return st.WriteJSONFile(opts.jsonPath)
	}
	return nil
}
