package app_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaykit/replay/examples/orders/app"
	"github.com/replaykit/replay/internal/pgtest"
)

func TestCreateOrder(t *testing.T) {
	_, base := startApp(t, app.Config{DatabaseURL: pgtest.Database(t)})

	in := app.NewOrder{Customer: "ada", Items: []app.Item{
		{SKU: "SKU-1001", Qty: 2, PriceCents: 1899},
		{SKU: "SKU-1004", Qty: 1, PriceCents: 499},
	}}
	before := time.Now().Add(-time.Minute)
	r := call(t, "POST", base+"/orders", in)
	if r.status != http.StatusCreated {
		t.Fatalf("POST /orders = %d %s, want 201", r.status, r.body)
	}
	var got app.Order
	r.decode(t, &got)
	if got.ID < 1 {
		t.Errorf("id = %d, want a positive id", got.ID)
	}
	if loc := r.header.Get("Location"); loc != fmt.Sprintf("/orders/%d", got.ID) {
		t.Errorf("Location = %q, want /orders/%d", loc, got.ID)
	}
	if got.CreatedAt.Before(before) || got.CreatedAt.After(time.Now().Add(time.Minute)) {
		t.Errorf("created_at = %v, want about now", got.CreatedAt)
	}
	want := app.Order{ID: got.ID, Customer: "ada", Status: "pending", CreatedAt: got.CreatedAt, Items: in.Items, TotalCents: 2*1899 + 499}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("created order (-want +got):\n%s", d)
	}

	// A second order gets another id.
	r2 := call(t, "POST", base+"/orders", app.SeedOrder(1))
	var got2 app.Order
	r2.decode(t, &got2)
	if r2.status != http.StatusCreated || got2.ID <= got.ID {
		t.Errorf("second POST = %d id %d, want 201 and an id > %d", r2.status, got2.ID, got.ID)
	}
}

func TestCreateOrderRejectsBadBodies(t *testing.T) {
	_, base := startApp(t, app.Config{DatabaseURL: pgtest.Database(t)})
	tests := []struct {
		name, body, wantErr string
	}{
		{"not JSON", `{"customer":`, "invalid order JSON"},
		{"wrong type", `{"customer":"a","items":[{"sku":"S","qty":"two","price_cents":1}]}`, "invalid order JSON"},
		{"empty body", ``, "invalid order JSON"},
		{"no items", `{"customer":"a","items":[]}`, `"items" must hold at least one item`},
		{"items missing", `{"customer":"a"}`, `"items" must hold at least one item`},
		{"no customer", `{"items":[{"sku":"S","qty":1,"price_cents":1}]}`, `"customer" is required`},
		{"no sku", `{"customer":"a","items":[{"qty":1,"price_cents":1}]}`, `items[0]: "sku" is required`},
		{"zero qty", `{"customer":"a","items":[{"sku":"S","qty":1,"price_cents":1},{"sku":"S","qty":0,"price_cents":1}]}`, `items[1]: "qty" must be at least 1, got 0`},
		{"negative price", `{"customer":"a","items":[{"sku":"S","qty":1,"price_cents":-5}]}`, `"price_cents" must not be negative`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := call(t, "POST", base+"/orders", tt.body)
			if r.status != http.StatusBadRequest {
				t.Fatalf("status = %d %s, want 400", r.status, r.body)
			}
			if msg := r.errorMessage(t); !strings.Contains(msg, tt.wantErr) {
				t.Errorf("error = %q, want it to contain %q", msg, tt.wantErr)
			}
		})
	}
	// Nothing was stored.
	var list app.OrderList
	call(t, "GET", base+"/orders", nil).decode(t, &list)
	if len(list.Orders) != 0 {
		t.Errorf("GET /orders after rejected POSTs lists %d orders, want 0", len(list.Orders))
	}
}

func TestGetOrderAndStatus(t *testing.T) {
	_, base := startApp(t, app.Config{DatabaseURL: pgtest.Database(t)})
	var created app.Order
	r := call(t, "POST", base+"/orders", app.SeedOrder(3))
	if r.status != http.StatusCreated {
		t.Fatalf("POST /orders = %d %s", r.status, r.body)
	}
	r.decode(t, &created)

	r = call(t, "GET", fmt.Sprintf("%s/orders/%d", base, created.ID), nil)
	if r.status != http.StatusOK {
		t.Fatalf("GET /orders/{id} = %d %s", r.status, r.body)
	}
	var got app.Order
	r.decode(t, &got)
	if d := cmp.Diff(created, got); d != "" {
		t.Errorf("GET /orders/{id} differs from the created order (-created +got):\n%s", d)
	}
	if len(got.Items) != 4 {
		t.Errorf("got %d items, want 4 (SeedOrder(3))", len(got.Items))
	}

	r = call(t, "GET", fmt.Sprintf("%s/orders/%d/status", base, created.ID), nil)
	var st app.Status
	r.decode(t, &st)
	if r.status != http.StatusOK || st != (app.Status{ID: created.ID, Status: "pending"}) {
		t.Errorf("GET /orders/{id}/status = %d %+v, want 200 {%d pending}", r.status, st, created.ID)
	}

	tests := []struct {
		path       string
		wantStatus int
		wantErr    string
	}{
		{"/orders/999999", http.StatusNotFound, "order 999999 not found"},
		{"/orders/999999/status", http.StatusNotFound, "order 999999 not found"},
		{"/orders/abc", http.StatusBadRequest, `invalid order id "abc"`},
		{"/orders/0", http.StatusBadRequest, `invalid order id "0"`},
		{"/orders/-3/status", http.StatusBadRequest, `invalid order id "-3"`},
		{"/orders/99999999999999999999", http.StatusBadRequest, "invalid order id"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			r := call(t, "GET", base+tt.path, nil)
			if r.status != tt.wantStatus {
				t.Fatalf("status = %d %s, want %d", r.status, r.body, tt.wantStatus)
			}
			if msg := r.errorMessage(t); !strings.Contains(msg, tt.wantErr) {
				t.Errorf("error = %q, want it to contain %q", msg, tt.wantErr)
			}
		})
	}

	// Methods the service does not serve.
	if r := call(t, "DELETE", fmt.Sprintf("%s/orders/%d", base, created.ID), nil); r.status != http.StatusMethodNotAllowed {
		t.Errorf("DELETE /orders/{id} = %d, want 405", r.status)
	}
	if r := call(t, "GET", base+"/nope", nil); r.status != http.StatusNotFound {
		t.Errorf("GET /nope = %d, want 404", r.status)
	}
}

// TestListOrders checks GET /orders in both modes against the same data:
// the 50 newest orders, newest first, with their item counts, and the same
// body whichever mode computed it.
func TestListOrders(t *testing.T) {
	pool := newPool(t, pgtest.Database(t), nil, "")
	_, fast := startApp(t, app.Config{DB: pool})
	_, slow := startApp(t, app.Config{DB: pool, Slow: true})

	// An empty list is [], not null.
	for _, base := range []string{fast, slow} {
		r := call(t, "GET", base+"/orders", nil)
		if r.status != http.StatusOK || strings.TrimSpace(string(r.body)) != `{"orders":[]}` {
			t.Errorf("GET /orders on an empty database = %d %s, want 200 {\"orders\":[]}", r.status, r.body)
		}
	}

	ids, err := app.Seed(context.Background(), fast, nil, 60)
	if err != nil {
		t.Fatal(err)
	}
	rf := call(t, "GET", fast+"/orders", nil)
	rs := call(t, "GET", slow+"/orders", nil)
	if rf.status != http.StatusOK || rs.status != http.StatusOK {
		t.Fatalf("GET /orders = %d (fast), %d (slow), want 200", rf.status, rs.status)
	}
	if string(rf.body) != string(rs.body) {
		t.Errorf("fast and slow GET /orders differ:\nfast %s\nslow %s", rf.body, rs.body)
	}
	var list app.OrderList
	rf.decode(t, &list)
	if len(list.Orders) != app.ListLimit {
		t.Fatalf("GET /orders lists %d orders, want %d", len(list.Orders), app.ListLimit)
	}
	for k, s := range list.Orders {
		i := 59 - k // seed index: newest first
		want := app.SeedOrder(i)
		if s.ID != ids[i] || s.Customer != want.Customer || s.Status != "pending" || s.ItemCount != len(want.Items) {
			t.Errorf("orders[%d] = %+v, want id %d customer %s item_count %d", k, s, ids[i], want.Customer, len(want.Items))
		}
	}
}

func TestMigrateConcurrently(t *testing.T) {
	for round := 0; round < 3; round++ {
		url := pgtest.Database(t)
		const n = 4
		errs := make(chan error, n)
		start := make(chan struct{})
		for i := 0; i < n; i++ {
			go func() {
				<-start
				a, err := app.New(context.Background(), app.Config{DatabaseURL: url})
				if err == nil {
					a.Close()
				}
				errs <- err
			}()
		}
		close(start)
		for i := 0; i < n; i++ {
			if err := <-errs; err != nil {
				t.Errorf("round %d: concurrent app.New: %v", round, err)
			}
		}
		// The schema is usable, and migrating again changes nothing.
		pool := newPool(t, url, nil, "")
		if err := app.Migrate(context.Background(), pool); err != nil {
			t.Fatalf("Migrate again: %v", err)
		}
		var tables int
		err := pool.QueryRow(context.Background(),
			`SELECT count(*) FROM information_schema.tables WHERE table_name IN ('orders', 'order_items')`).Scan(&tables)
		if err != nil || tables != 2 {
			t.Errorf("tables orders, order_items: found %d (%v), want 2", tables, err)
		}
	}
}

func TestNewNeedsADatabase(t *testing.T) {
	_, err := app.New(context.Background(), app.Config{})
	if err == nil || !strings.Contains(err.Error(), "no database") {
		t.Errorf("New without a database: err = %v, want one naming the missing database", err)
	}
	_, err = app.New(context.Background(), app.Config{DatabaseURL: "postgres://nobody@127.0.0.1:1/none?connect_timeout=5"})
	if err == nil || !strings.Contains(err.Error(), "connect to database") {
		t.Errorf("New with an unreachable database: err = %v, want a connect error", err)
	}
}

func TestSeedAndTraffic(t *testing.T) {
	cat := startCatalog(t)
	_, base := startApp(t, app.Config{DatabaseURL: pgtest.Database(t), CatalogURL: cat.url, HTTPClient: cat.client})
	ctx := context.Background()
	if _, err := app.Traffic(ctx, base, nil, 1); err == nil || !strings.Contains(err.Error(), "seed it first") {
		t.Errorf("Traffic on an empty service: err = %v, want one asking to seed", err)
	}
	ids, err := app.Seed(ctx, base, nil, 5)
	if err != nil || len(ids) != 5 {
		t.Fatalf("Seed = %v, %v; want 5 ids", ids, err)
	}
	sent, err := app.Traffic(ctx, base, nil, 3)
	if err != nil {
		t.Fatalf("Traffic: %v", err)
	}
	if sent != 1+6*3 {
		t.Errorf("Traffic sent %d requests, want %d", sent, 1+6*3)
	}
	var list app.OrderList
	call(t, "GET", base+"/orders", nil).decode(t, &list)
	if len(list.Orders) != 5+3 {
		t.Errorf("after Seed(5) and Traffic(3 rounds): %d orders, want 8", len(list.Orders))
	}
	// SeedOrder is deterministic.
	if d := cmp.Diff(app.SeedOrder(7), app.SeedOrder(7)); d != "" || len(app.SeedOrder(7).Items) != 4 {
		t.Errorf("SeedOrder(7) not deterministic or wrong size: %s", d)
	}
}
