// Command orders is replay's demo workload: a small orders service on
// PostgreSQL with one outbound HTTPS dependency. See README.md and package
// github.com/replaykit/replay/examples/orders/app.
//
// Environment: DATABASE_URL (required), PORT (default 8080), HOST (default
// 127.0.0.1), APP_SLOW (1: N+1 in GET /orders), CATALOG_URL, APP_SQLCOMMENT,
// and for outbound calls HTTPS_PROXY/HTTP_PROXY/NO_PROXY and SSL_CERT_FILE.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/replaykit/replay/examples/orders/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := app.Serve(ctx, os.Getenv, logger); err != nil {
		// One line, whatever the error holds (pgx joins dial errors with newlines).
		fmt.Fprintf(os.Stderr, "orders: %s\n", strings.Join(strings.Fields(err.Error()), " "))
		os.Exit(1)
	}
}
