package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// Item is one line of an order.
type Item struct {
	// SKU names the product, e.g. "SKU-1001".
	SKU string `json:"sku"`
	// Qty is the number of units, at least 1.
	Qty int `json:"qty"`
	// PriceCents is the unit price in cents, zero or more.
	PriceCents int64 `json:"price_cents"`
}

// NewOrder is the body of POST /orders.
type NewOrder struct {
	Customer string `json:"customer"`
	Items    []Item `json:"items"`
}

// Order is an order with its items, as POST /orders and GET /orders/{id}
// return it.
type Order struct {
	ID        int64     `json:"id"`
	Customer  string    `json:"customer"`
	Status    string    `json:"status"`
	CreatedAt time.Time `json:"created_at"`
	Items     []Item    `json:"items"`
	// TotalCents is the sum of qty × price_cents over the items.
	TotalCents int64 `json:"total_cents"`
}

// Summary is one order in the GET /orders list.
type Summary struct {
	ID        int64     `json:"id"`
	Customer  string    `json:"customer"`
	Status    string    `json:"status"`
	CreatedAt time.Time `json:"created_at"`
	// ItemCount is the number of item lines of the order.
	ItemCount int `json:"item_count"`
}

// OrderList is the body of GET /orders.
type OrderList struct {
	Orders []Summary `json:"orders"`
}

// Status is the body of GET /orders/{id}/status.
type Status struct {
	ID     int64  `json:"id"`
	Status string `json:"status"`
}

// maxBody bounds the size of a POST /orders body.
const maxBody = 1 << 20

func (o *NewOrder) validate() error {
	if o.Customer == "" {
		return errors.New(`"customer" is required`)
	}
	if len(o.Items) == 0 {
		return errors.New(`"items" must hold at least one item`)
	}
	for i, it := range o.Items {
		switch {
		case it.SKU == "":
			return fmt.Errorf(`items[%d]: "sku" is required`, i)
		case it.Qty < 1:
			return fmt.Errorf(`items[%d]: "qty" must be at least 1, got %d`, i, it.Qty)
		case it.PriceCents < 0:
			return fmt.Errorf(`items[%d]: "price_cents" must not be negative, got %d`, i, it.PriceCents)
		}
	}
	return nil
}

// createOrder handles POST /orders. Statements per created order, always 4
// whatever the number of items:
//
//	begin
//	INSERT INTO orders … RETURNING …
//	INSERT INTO order_items … SELECT … FROM unnest(…)
//	commit
//
// A rejected body (400) runs none.
func (a *App) createOrder(w http.ResponseWriter, r *http.Request) {
	var in NewOrder
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	if err := dec.Decode(&in); err != nil {
		writeError(w, http.StatusBadRequest, "invalid order JSON: %v", err)
		return
	}
	if err := in.validate(); err != nil {
		writeError(w, http.StatusBadRequest, "invalid order: %v", err)
		return
	}

	ctx := r.Context()
	out := Order{Customer: in.Customer, Items: in.Items}
	skus := make([]string, len(in.Items))
	qtys := make([]int32, len(in.Items))
	prices := make([]int64, len(in.Items))
	for i, it := range in.Items {
		skus[i], qtys[i], prices[i] = it.SKU, int32(it.Qty), it.PriceCents
		out.TotalCents += int64(it.Qty) * it.PriceCents
	}

	tx, err := a.db.Begin(ctx)
	if err != nil {
		a.serverError(w, r, fmt.Errorf("begin: %w", err))
		return
	}
	defer tx.Rollback(ctx) // no statement once committed

	q, args := a.sql(ctx, `INSERT INTO orders (customer) VALUES ($1) RETURNING id, status, created_at`, in.Customer)
	if err := tx.QueryRow(ctx, q, args...).Scan(&out.ID, &out.Status, &out.CreatedAt); err != nil {
		a.serverError(w, r, fmt.Errorf("insert order: %w", err))
		return
	}
	q, args = a.sql(ctx, `INSERT INTO order_items (order_id, sku, qty, price_cents)
SELECT $1, t.sku, t.qty, t.price_cents
FROM unnest($2::text[], $3::integer[], $4::bigint[]) AS t(sku, qty, price_cents)`, out.ID, skus, qtys, prices)
	if _, err := tx.Exec(ctx, q, args...); err != nil {
		a.serverError(w, r, fmt.Errorf("insert order items: %w", err))
		return
	}
	if err := tx.Commit(ctx); err != nil {
		a.serverError(w, r, fmt.Errorf("commit: %w", err))
		return
	}
	w.Header().Set("Location", "/orders/"+strconv.FormatInt(out.ID, 10))
	writeJSON(w, http.StatusCreated, out)
}

// listOrders handles GET /orders: the ListLimit newest orders, newest first.
//
// Fast (Slow=false), 1 statement: the orders with a counting subquery.
// Slow (Slow=true), 1 + n statements for n listed orders (51 once there are
// 50 orders): the orders, then each order's items, counted in Go.
func (a *App) listOrders(w http.ResponseWriter, r *http.Request) {
	var (
		list []Summary
		err  error
	)
	if a.slow {
		list, err = a.listSlow(r)
	} else {
		list, err = a.listFast(r)
	}
	if err != nil {
		a.serverError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, OrderList{Orders: list})
}

func (a *App) listFast(r *http.Request) ([]Summary, error) {
	ctx := r.Context()
	q, args := a.sql(ctx, `SELECT o.id, o.customer, o.status, o.created_at,
       (SELECT count(*) FROM order_items i WHERE i.order_id = o.id) AS item_count
FROM orders o
ORDER BY o.id DESC
LIMIT 50`)
	rows, err := a.db.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list orders: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Summary, error) {
		var s Summary
		err := row.Scan(&s.ID, &s.Customer, &s.Status, &s.CreatedAt, &s.ItemCount)
		return s, err
	})
	if err != nil {
		return nil, fmt.Errorf("list orders: %w", err)
	}
	return nonNil(list), nil
}

func (a *App) listSlow(r *http.Request) ([]Summary, error) {
	ctx := r.Context()
	q, args := a.sql(ctx, `SELECT id, customer, status, created_at FROM orders ORDER BY id DESC LIMIT 50`)
	rows, err := a.db.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list orders: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Summary, error) {
		var s Summary
		err := row.Scan(&s.ID, &s.Customer, &s.Status, &s.CreatedAt)
		return s, err
	})
	if err != nil {
		return nil, fmt.Errorf("list orders: %w", err)
	}
	// The N+1: one query per order, fetching whole rows just to count them.
	for i := range list {
		q, args := a.sql(ctx, `SELECT id, sku, qty, price_cents FROM order_items WHERE order_id = $1`, list[i].ID)
		rows, err := a.db.Query(ctx, q, args...)
		if err != nil {
			return nil, fmt.Errorf("list items of order %d: %w", list[i].ID, err)
		}
		n := 0
		for rows.Next() {
			var (
				id, price int64
				sku       string
				qty       int32
			)
			if err := rows.Scan(&id, &sku, &qty, &price); err != nil {
				rows.Close()
				return nil, fmt.Errorf("list items of order %d: %w", list[i].ID, err)
			}
			n++
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("list items of order %d: %w", list[i].ID, err)
		}
		list[i].ItemCount = n
	}
	return nonNil(list), nil
}

// getOrder handles GET /orders/{id}: 1 statement (the order joined with its
// items), found or not; 0 for an id that is not a positive integer (400).
func (a *App) getOrder(w http.ResponseWriter, r *http.Request) {
	id, ok := orderID(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	q, args := a.sql(ctx, `SELECT o.id, o.customer, o.status, o.created_at, i.sku, i.qty, i.price_cents
FROM orders o
LEFT JOIN order_items i ON i.order_id = o.id
WHERE o.id = $1
ORDER BY i.id`, id)
	rows, err := a.db.Query(ctx, q, args...)
	if err != nil {
		a.serverError(w, r, fmt.Errorf("get order %d: %w", id, err))
		return
	}
	var (
		o     Order
		found bool
	)
	o.Items = []Item{}
	for rows.Next() {
		var (
			sku   *string
			qty   *int32
			price *int64
		)
		if err := rows.Scan(&o.ID, &o.Customer, &o.Status, &o.CreatedAt, &sku, &qty, &price); err != nil {
			rows.Close()
			a.serverError(w, r, fmt.Errorf("get order %d: %w", id, err))
			return
		}
		found = true
		if sku != nil {
			it := Item{SKU: *sku, Qty: int(*qty), PriceCents: *price}
			o.Items = append(o.Items, it)
			o.TotalCents += int64(it.Qty) * it.PriceCents
		}
	}
	if err := rows.Err(); err != nil {
		a.serverError(w, r, fmt.Errorf("get order %d: %w", id, err))
		return
	}
	if !found {
		writeError(w, http.StatusNotFound, "order %d not found", id)
		return
	}
	writeJSON(w, http.StatusOK, o)
}

// getStatus handles GET /orders/{id}/status: 1 statement, found or not; 0 for
// an id that is not a positive integer (400).
func (a *App) getStatus(w http.ResponseWriter, r *http.Request) {
	id, ok := orderID(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	out := Status{ID: id}
	q, args := a.sql(ctx, `SELECT status FROM orders WHERE id = $1`, id)
	err := a.db.QueryRow(ctx, q, args...).Scan(&out.Status)
	if errors.Is(err, pgx.ErrNoRows) {
		writeError(w, http.StatusNotFound, "order %d not found", id)
		return
	}
	if err != nil {
		a.serverError(w, r, fmt.Errorf("get status of order %d: %w", id, err))
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// orderID parses the {id} path segment; on failure it answers 400.
func orderID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	raw := r.PathValue("id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id < 1 {
		writeError(w, http.StatusBadRequest, "invalid order id %q: want a positive integer", raw)
		return 0, false
	}
	return id, true
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
