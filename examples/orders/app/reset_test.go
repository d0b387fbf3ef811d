package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/replaykit/replay/examples/orders/app"
	"github.com/replaykit/replay/internal/pgtest"
)

func TestResetSeedsKnownOrders(t *testing.T) {
	ctx := context.Background()
	pool := newPool(t, pgtest.Database(t), nil, "")
	for round := 0; round < 2; round++ {
		if err := app.Reset(ctx, pool, 60); err != nil {
			t.Fatal(err)
		}
		var orders, items, minID, maxID int64
		pool.QueryRow(ctx, "SELECT count(*), min(id), max(id) FROM orders").Scan(&orders, &minID, &maxID)
		pool.QueryRow(ctx, "SELECT count(*) FROM order_items").Scan(&items)
		var wantItems int64
		for i := 0; i < 60; i++ {
			wantItems += int64(len(app.SeedOrder(i).Items))
		}
		if orders != 60 || minID != 1 || maxID != 60 || items != wantItems {
			t.Fatalf("round %d: %d orders (ids %d…%d), %d items; want 60 (1…60), %d", round, orders, minID, maxID, items, wantItems)
		}
		// A new order after a reset gets the next id, as in the recording.
		var next int64
		if err := pool.QueryRow(ctx, "INSERT INTO orders (customer) VALUES ('x') RETURNING id").Scan(&next); err != nil || next != 61 {
			t.Fatalf("round %d: next id %d, %v; want 61", round, next, err)
		}
	}

	// The service sees the seeded orders: order 7 is SeedOrder(6).
	_, url := startApp(t, app.Config{DB: pool})
	resp, err := http.Get(url + "/orders/7")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var o app.Order
	if err := json.NewDecoder(resp.Body).Decode(&o); err != nil {
		t.Fatal(err)
	}
	want := app.SeedOrder(6)
	if resp.StatusCode != 200 || o.Customer != want.Customer || len(o.Items) != len(want.Items) {
		t.Fatalf("GET /orders/7 = %d %+v, want customer %s with %d items", resp.StatusCode, o, want.Customer, len(want.Items))
	}
	// Created at a fixed time: a recording and its replay answer alike.
	if wantAt := app.SeedTime.Add(6 * time.Minute); !o.CreatedAt.Equal(wantAt) {
		t.Errorf("order 7 created_at %v, want %v", o.CreatedAt, wantAt)
	}
}
