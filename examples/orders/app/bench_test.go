package app_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/replaykit/replay/examples/orders/app"
	"github.com/replaykit/replay/internal/pgtest"
)

// BenchmarkListOrders measures GET /orders over loopback HTTP with 60 orders
// in the database, one request at a time: the cost of the N+1.
func BenchmarkListOrders(b *testing.B) {
	ctx := context.Background()
	db := pgtest.Database(b)
	for _, slow := range []bool{false, true} {
		name := "fast"
		if slow {
			name = "slow"
		}
		b.Run(name, func(b *testing.B) {
			a, err := app.New(ctx, app.Config{DatabaseURL: db, Slow: slow})
			if err != nil {
				b.Fatal(err)
			}
			defer a.Close()
			srv := httptest.NewServer(a)
			defer srv.Close()
			if !slow {
				if _, err := app.Seed(ctx, srv.URL, nil, 60); err != nil {
					b.Fatal(err)
				}
			}
			client := srv.Client()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				resp, err := client.Get(srv.URL + "/orders")
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
		})
	}
}
