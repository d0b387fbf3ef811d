package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/replaykit/replay/examples/orders/catalog"
)

// SeedOrder returns the i-th order that Seed posts (i from 0): the same on
// every call. It has 1 to 4 items (1 + i%4) of catalog products at their
// catalog prices.
func SeedOrder(i int) NewOrder {
	customers := []string{"ada", "grace", "edsger", "barbara", "donald", "margaret", "ken"}
	products := catalog.Products()
	o := NewOrder{Customer: customers[i%len(customers)]}
	for j := 0; j < 1+i%4; j++ {
		p := products[(i*3+j)%len(products)]
		o.Items = append(o.Items, Item{SKU: p.SKU, Qty: 1 + (i+j)%3, PriceCents: p.PriceCents})
	}
	return o
}

// Seed posts n orders (SeedOrder(0) … SeedOrder(n-1)) one after another to
// the service at baseURL and returns their ids. client nil means a plain
// client with a 30s timeout.
func Seed(ctx context.Context, baseURL string, client *http.Client, n int) ([]int64, error) {
	c := newCaller(baseURL, client)
	ids := make([]int64, 0, n)
	for i := 0; i < n; i++ {
		var o Order
		if err := c.do(ctx, http.MethodPost, "/orders", SeedOrder(i), http.StatusCreated, &o); err != nil {
			return ids, fmt.Errorf("seed order %d: %w", i, err)
		}
		ids = append(ids, o.ID)
	}
	return ids, nil
}

// Traffic sends rounds rounds of a fixed request mix to the service at
// baseURL, one request at a time, and returns how many requests it sent.
// Before the rounds, one GET /orders picks the orders to read; so it sends
// 1 + 6×rounds requests. Each round is:
//
//	GET  /orders
//	GET  /orders/{id}          an order listed by the first GET /orders
//	GET  /orders/{id}/status   the same order
//	GET  /orders/{id}          an id that does not exist (404)
//	GET  /catalog
//	POST /orders               SeedOrder(round)
//
// Any other status than the expected one is an error. The service needs at
// least one order before the first round (see Seed). client nil means a
// plain client with a 30s timeout.
func Traffic(ctx context.Context, baseURL string, client *http.Client, rounds int) (int, error) {
	c := newCaller(baseURL, client)
	var list OrderList
	sent := 1
	if err := c.do(ctx, http.MethodGet, "/orders", nil, http.StatusOK, &list); err != nil {
		return sent, fmt.Errorf("traffic: %w", err)
	}
	if len(list.Orders) == 0 {
		return sent, fmt.Errorf("traffic: the service has no orders; seed it first")
	}
	missing := list.Orders[0].ID + 1_000_000_000
	for r := 0; r < rounds; r++ {
		id := strconv.FormatInt(list.Orders[r%len(list.Orders)].ID, 10)
		steps := []struct {
			method, path string
			body         any
			want         int
		}{
			{http.MethodGet, "/orders", nil, http.StatusOK},
			{http.MethodGet, "/orders/" + id, nil, http.StatusOK},
			{http.MethodGet, "/orders/" + id + "/status", nil, http.StatusOK},
			{http.MethodGet, "/orders/" + strconv.FormatInt(missing, 10), nil, http.StatusNotFound},
			{http.MethodGet, "/catalog", nil, http.StatusOK},
			{http.MethodPost, "/orders", SeedOrder(r), http.StatusCreated},
		}
		for _, s := range steps {
			sent++
			if err := c.do(ctx, s.method, s.path, s.body, s.want, nil); err != nil {
				return sent, fmt.Errorf("traffic: %w", err)
			}
		}
	}
	return sent, nil
}

// caller sends JSON requests to the service.
type caller struct {
	base   string
	client *http.Client
}

func newCaller(baseURL string, client *http.Client) caller {
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	return caller{base: strings.TrimRight(baseURL, "/"), client: client}
}

func (c caller) do(ctx context.Context, method, path string, in any, want int, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("%s %s: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("%s %s: read response: %w", method, path, err)
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: got %s, want %d: %s", method, path, resp.Status, want, bytes.TrimSpace(b))
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: decode response: %w", method, path, err)
		}
	}
	return nil
}
