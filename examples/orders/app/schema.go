package app

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// migrateLock is the pg_advisory_xact_lock key that serialises schema
// creation: concurrent CREATE TABLE IF NOT EXISTS of the same table can fail
// with a unique violation in pg_type, e.g. when two builds start together.
const migrateLock int64 = 0x6f72646572730001 // "orders" + 1

// schema is idempotent; it runs in one transaction under migrateLock.
const schema = `
CREATE TABLE IF NOT EXISTS orders (
    id         bigserial   PRIMARY KEY,
    customer   text        NOT NULL,
    status     text        NOT NULL DEFAULT 'pending',
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS order_items (
    id          bigserial PRIMARY KEY,
    order_id    bigint    NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
    sku         text      NOT NULL,
    qty         integer   NOT NULL CHECK (qty > 0),
    price_cents bigint    NOT NULL CHECK (price_cents >= 0)
);
CREATE INDEX IF NOT EXISTS order_items_order_id_idx ON order_items (order_id);
`

// Migrate creates the tables orders and order_items and their index if they
// do not exist. It is safe to run concurrently against one database.
func Migrate(ctx context.Context, db *pgxpool.Pool) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrateLock); err != nil {
		return fmt.Errorf("migrate: lock: %w", err)
	}
	if _, err := tx.Exec(ctx, schema); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}
