package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/replaykit/replay/examples/orders/app"
	"github.com/replaykit/replay/internal/pgtest"
)

func TestSQLComment(t *testing.T) {
	tr := &tracer{}
	pool := newPool(t, pgtest.Database(t), tr, "")
	_, base := startApp(t, app.Config{DB: pool, Slow: true, SQLComment: true})
	ids, err := app.Seed(context.Background(), base, nil, 3)
	if err != nil {
		t.Fatal(err)
	}

	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	comment := "/*traceparent='" + tp + "'*/"
	tests := []struct {
		method, path string
		body         any
		want         []string // statements, by substring; commented ones end with the comment
	}{
		{"POST", "/orders", app.SeedOrder(1), []string{"begin", "INSERT INTO orders", "INSERT INTO order_items", "commit"}},
		{"GET", "/orders", nil, append([]string{"FROM orders ORDER BY id DESC"}, repeat("FROM order_items WHERE order_id = $1", 4)...)},
		{"GET", fmt.Sprintf("/orders/%d", ids[0]), nil, []string{"LEFT JOIN order_items"}},
		{"GET", fmt.Sprintf("/orders/%d/status", ids[0]), nil, []string{"SELECT status FROM orders"}},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			tr.take()
			r := call(t, tt.method, base+tt.path, tt.body, "traceparent", tp)
			if r.status >= 300 {
				t.Fatalf("status %d %s", r.status, r.body)
			}
			got := tr.take()
			if !matchSQL(got, tt.want) {
				t.Fatalf("statements %q, want %q", got, tt.want)
			}
			for _, sql := range got {
				// pgx sends BEGIN and COMMIT itself; they stay untagged.
				tagged := strings.HasSuffix(sql, " "+comment)
				if tagged == (sql == "begin" || sql == "commit") {
					t.Errorf("statement %q: tagged = %v", sql, tagged)
				}
			}
		})
	}

	// A traceparent that is not in W3C form never reaches the SQL text.
	tr.take()
	r := call(t, "GET", fmt.Sprintf("%s/orders/%d/status", base, ids[0]), nil, "traceparent", "*/ DROP TABLE orders; /*")
	if r.status != 200 {
		t.Fatalf("status %d %s", r.status, r.body)
	}
	if got := tr.take(); len(got) != 1 || strings.Contains(got[0], "DROP") || strings.Contains(got[0], "/*") {
		t.Errorf("statements %q, want one without a comment", got)
	}
}
