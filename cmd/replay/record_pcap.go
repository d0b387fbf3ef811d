package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

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
	w, err := snapshots.Create(opts.out, snapshots.Options{Rules: p.rules, Logger: logger, Redactor: opts.redact.Redactor()})
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	t := recorder.NewTally(w, p.rules)
	st, err := recorder.ImportPcap(ctx, f, t, recorder.PcapConfig{
		Ports:     opts.ports,
		BodyLimit: p.bodyLimit,
		Logger:    logger,
	})
	if err != nil {
		err = fmt.Errorf("%s: %w", opts.fromPcap, err)
	}
	if err := w.CloseOrRemove(err); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	if err := printSummary(ctx, opts.stdout, opts.stderr, opts.out, t.Summary(), false); err != nil {
		return err
	}
	if err := st.WriteText(opts.stdout); err != nil {
		return err
	}
	if msg := st.Warning(); msg != "" {
		fmt.Fprintln(opts.stderr, "warning: "+msg)
	}
	return nil
}
