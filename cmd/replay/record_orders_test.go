package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/schematest"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/replaykit/replay/examples/orders/app"
	"github.com/replaykit/replay/internal/pgtest"
)

// TestRecordOrdersSQLPerRequest records the demo workload through --inbound
// and --postgres on a table of 60 orders: GET /orders runs 1 statement per
// request with APP_SLOW=0 and 51 (one per listed order, plus the list) with
// APP_SLOW=1, and `replay inspect` shows exactly that.
func TestRecordOrdersSQLPerRequest(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	for _, tt := range []struct {
		slow bool
		want float64
	}{{false, 1}, {true, 51}} {
		t.Run(fmt.Sprintf("APP_SLOW=%v", tt.slow), func(t *testing.T) {
			dbName := "orders_" + map[bool]string{false: "fast", true: "slow"}[tt.slow]
			admin, err := pgxpool.New(ctx, db.URL("postgres"))
			if err != nil {
				t.Fatal(err)
			}
			defer admin.Close()
			if _, err := admin.Exec(ctx, "CREATE DATABASE "+dbName); err != nil {
				t.Fatal(err)
			}
			direct, err := pgxpool.New(ctx, db.URL(dbName))
			if err != nil {
				t.Fatal(err)
			}
			defer direct.Close()
			if err := app.Reset(ctx, direct, 60); err != nil {
				t.Fatal(err)
			}

			// The app's listener exists first (the recorder forwards to it);
			// its pool is opened once the SQL proxy listens.
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			snap := filepath.Join(t.TempDir(), "orders.snap")
			rec, stop := recordInProcess(t, &recordOptions{
				out:      snap,
				inbound:  []string{"127.0.0.1:0=http://" + l.Addr().String()},
				postgres: postgresFlags{spec: "127.0.0.1:0=" + db.Addr()},
			})
			svc, err := app.New(ctx, app.Config{
				DatabaseURL: strings.Replace(db.URL(dbName), db.Addr(), dialable(rec.PostgresAddr()), 1),
				Slow:        tt.slow,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer svc.Close()
			srv := &http.Server{Handler: svc}
			go srv.Serve(l)
			defer srv.Close()

			// The app's start-up statements (its migration) go through the
			// proxy before the first request, as when a service starts and
			// then serves: wait until the recorder has counted them all
			// (no new one for 200 ms). Without the wait, a migration
			// statement the proxy handled while the first request was
			// already in flight was counted to it, in about 1 run of 15.
			for last, since := int64(-1), time.Now(); time.Since(since) < 200*time.Millisecond; time.Sleep(10 * time.Millisecond) {
				if n := rec.Summary().Statements; n != last {
					last, since = n, time.Now()
				}
			}
			base := "http://" + dialable(rec.InboundAddrs()[0])
			for i := 0; i < 5; i++ {
				resp, err := http.Get(base + "/orders")
				if err != nil {
					t.Fatal(err)
				}
				var list app.OrderList
				json.NewDecoder(resp.Body).Decode(&list)
				resp.Body.Close()
				if resp.StatusCode != 200 || len(list.Orders) != app.ListLimit {
					t.Fatalf("GET /orders = %d with %d orders; want 200 with %d", resp.StatusCode, len(list.Orders), app.ListLimit)
				}
			}
			if _, err := stop(); err != nil {
				t.Fatal(err)
			}

			code, stdout, stderr := cliRun(t, "", "inspect", snap, "--format", "json")
			if code != 0 {
				t.Fatalf("inspect: exit %d: %s", code, stderr)
			}
			var inv struct {
				Endpoints []struct {
					Endpoint      string  `json:"endpoint"`
					Count         int     `json:"count"`
					SQLPerRequest float64 `json:"sql_per_request"`
				} `json:"endpoints"`
			}
			schematest.Check(t, "inspect", []byte(stdout))
			if err := json.Unmarshal([]byte(stdout), &inv); err != nil {
				t.Fatal(err)
			}
			found := false
			for _, e := range inv.Endpoints {
				if e.Endpoint == "GET /orders" {
					found = true
					if e.Count != 5 || e.SQLPerRequest != tt.want {
						t.Errorf("GET /orders: %d exchanges, %v statements per request; want 5, %v", e.Count, e.SQLPerRequest, tt.want)
					}
				}
			}
			if !found {
				t.Fatalf("inspect shows no GET /orders:\n%s", stdout)
			}
		})
	}
}
