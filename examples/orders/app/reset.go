package app

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// SeedTime is when Reset's first order was created; order i+1 a minute
// after order i. Fixed, so that a recording and a replay of it, whenever
// their data was reset, answer with the same orders, timestamps included.
var SeedTime = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// Reset brings the database to a known state: the schema, and exactly n
// orders, SeedOrder(0) … SeedOrder(n-1), with ids 1…n, created from
// SeedTime on. It is what a replay runs before each side of a comparison
// (--reset), so that both builds start from the same data and recorded
// paths like /orders/7 name the same order.
func Reset(ctx context.Context, db *pgxpool.Pool, n int) error {
	if err := Migrate(ctx, db); err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "TRUNCATE order_items, orders RESTART IDENTITY"); err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	var orders, items [][]any
	for i := 0; i < n; i++ {
		o := SeedOrder(i)
		orders = append(orders, []any{int64(i + 1), o.Customer, SeedTime.Add(time.Duration(i) * time.Minute)})
		for _, it := range o.Items {
			items = append(items, []any{int64(i + 1), it.SKU, int32(it.Qty), it.PriceCents})
		}
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"orders"}, []string{"id", "customer", "created_at"}, pgx.CopyFromRows(orders)); err != nil {
		return fmt.Errorf("reset: orders: %w", err)
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"order_items"}, []string{"order_id", "sku", "qty", "price_cents"}, pgx.CopyFromRows(items)); err != nil {
		return fmt.Errorf("reset: order_items: %w", err)
	}
	if _, err := tx.Exec(ctx, "SELECT setval(pg_get_serial_sequence('orders', 'id'), $1, $2)", int64(max(n, 1)), n > 0); err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	return tx.Commit(ctx)
}
