package main

import (
	"errors"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/replaykit/replay/examples/orders/app"
)

// PLACEHOLDER (the lead is building `replay demo`); the hidden `demo orders`
// subcommand below is final: it runs the demo workload from the replay binary.
func newCmdDemo(s streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the whole flow on the demo workload",
		RunE:  func(cmd *cobra.Command, args []string) error { return errors.New("demo: not built yet") },
	}
	cmd.AddCommand(newCmdDemoOrders(s))
	return cmd
}

// newCmdDemoOrders runs the demo's orders service (examples/orders) from the
// replay binary, so that the demo needs no Go toolchain: the same as
// `go run ./examples/orders`, configured by PORT, DATABASE_URL, APP_SLOW,
// CATALOG_URL and the proxy and CA variables.
func newCmdDemoOrders(s streams) *cobra.Command {
	return &cobra.Command{
		Use:    "orders",
		Short:  "Run the demo's orders service (configured by environment variables)",
		Hidden: true,
		Args:   exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			logger := slog.New(slog.NewTextHandler(s.err, nil))
			return app.Serve(cmd.Context(), os.Getenv, logger)
		},
	}
}
