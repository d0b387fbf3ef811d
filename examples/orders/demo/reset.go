package demo

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/replaykit/replay/examples/orders/app"
)

// Reset brings the demo's database at url to its known state: the schema
// and n seeded orders (app.Reset). The comparison runs it before each side
// through `replay demo reset`.
func Reset(ctx context.Context, url string, n int) error {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return fmt.Errorf("demo reset: %w", err)
	}
	defer pool.Close()
	if err := app.Reset(ctx, pool, n); err != nil {
		return fmt.Errorf("demo %w", err)
	}
	return nil
}
