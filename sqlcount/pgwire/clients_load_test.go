package pgwire

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/lib/pq"

	"github.com/replaykit/replay/internal/pgtest"
	"github.com/replaykit/replay/sqlcount/sqlcore"
)

// TestManyConnections runs many connections at once through one proxy.
func TestManyConnections(t *testing.T) {
	tp, url, _ := proxied(t)
	const conns, each = 40, 25
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for i := range conns {
		wg.Go(func() {
			conn, err := pgx.Connect(context.Background(), url)
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close(context.Background())
			for j := range each {
				var v int
				if err := conn.QueryRow(context.Background(), "SELECT $1::int * 2", i*each+j).Scan(&v); err != nil || v != 2*(i*each+j) {
					errs <- fmt.Errorf("conn %d: %d, %v", i, v, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st := tp.Stats()
	if st.Statements != conns*each || len(st.Fingerprints) != 1 || st.Fingerprints[0].Count != conns*each {
		t.Errorf("stats = %+v, want %d × SELECT ?::int * ?", st, conns*each)
	}
	seen := map[int64]int{}
	for _, s := range tp.statements() {
		seen[s.Conn]++
	}
	if len(seen) != conns {
		t.Errorf("statements on %d connections, want %d", len(seen), conns)
	}
}

// TestLargeTransfersSlowPeer moves tens of megabytes each way through the
// proxy while the receiving side lags, so that the relay has to hold what
// its peer has not taken yet, with the event-loop relay, with the goroutine
// relay and as replay sqlcount relays (a loop per core, answers decoded
// after they are relayed): every byte arrives and every statement is
// counted.
func TestLargeTransfersSlowPeer(t *testing.T) {
	for _, mode := range []struct {
		name  string
		setup func(*Config)
	}{
		{"default", func(*Config) {}},
		{"goroutines", func(c *Config) { c.NoEventLoops = true }},
		{"own process", sqlcore.OwnProcess}, // as replay sqlcount relays
	} {
		t.Run(mode.name, func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0)) // OwnProcess raises it
			direct := pgtest.Database(t)
			c := pgtest.Shared(t)
			tp := startProxy(t, c.Addr(), mode.setup)
			url := tp.url(c, dbName(t, direct))
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)

			// Server to client: 16 MB of rows, read slowly at first so the
			// client's socket fills and the proxy's writes stall.
			const rows, width = 16000, 1000
			rs, err := conn.Query(ctx, "SELECT i, repeat(chr(65 + i % 26), $1::int) FROM generate_series(1, $2::int) AS i", width, rows)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for rs.Next() {
				var i int
				var s string
				if err := rs.Scan(&i, &s); err != nil {
					t.Fatal(err)
				}
				n++
				if i != n || len(s) != width || s[0] != byte(65+i%26) || s[width-1] != s[0] {
					t.Fatalf("row %d: got %d, %d bytes of %q", n, i, len(s), s[:1])
				}
				if n <= 20 {
					time.Sleep(10 * time.Millisecond)
				}
			}
			if err := rs.Err(); err != nil {
				t.Fatal(err)
			}
			if n != rows {
				t.Fatalf("%d rows, want %d", n, rows)
			}

			// Client to server: 16 MB by COPY, which the server takes while
			// it writes them to a table.
			if _, err := conn.Exec(ctx, "CREATE TABLE big (i int, s text)"); err != nil {
				t.Fatal(err)
			}
			src := make([][]any, rows)
			for i := range src {
				src[i] = []any{i, strings.Repeat("z", width)}
			}
			copied, err := conn.CopyFrom(ctx, pgx.Identifier{"big"}, []string{"i", "s"}, pgx.CopyFromRows(src))
			if err != nil || copied != rows {
				t.Fatalf("copy: %d rows, %v", copied, err)
			}
			var total int64
			if err := conn.QueryRow(ctx, "SELECT sum(length(s)) FROM big").Scan(&total); err != nil || total != rows*width {
				t.Fatalf("sum = %d, %v; want %d", total, err, rows*width)
			}

			counts := fingerprintCounts(tp.statementsOnce(4))
			var got []string
			for fp, k := range counts {
				got = append(got, fmt.Sprintf("%d %s", k, fp))
			}
			if len(counts) != 4 {
				t.Errorf("fingerprints:\n%s", strings.Join(got, "\n"))
			}
			for _, s := range tp.statements() {
				if strings.HasPrefix(s.SQL, "SELECT i,") && s.Rows != rows {
					t.Errorf("%q: %d rows, want %d", s.SQL, s.Rows, rows)
				}
				if strings.HasPrefix(s.CommandTag, "COPY") && s.Rows != rows {
					t.Errorf("copy: %d rows, want %d", s.Rows, rows)
				}
			}
		})
	}
}
