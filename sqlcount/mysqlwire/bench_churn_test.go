package mysqlwire

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/replaykit/replay/internal/mariadbtest"
)

// BenchmarkConnectionChurn measures connection setup: 4 clients each
// running SELECT 1 on a new connection every time (go-sql-driver/mysql
// keeping no idle connection, as an app without a pool does), against
// MariaDB directly, through the counter (as replay sqlcount runs it) and
// through HAProxy in TCP mode, taking turns round after round, and reports
// each one's queries per second and the counter/HAProxy ratio (the median
// of the rounds' ratios). Run it once:
//
//	go test -run '^$' -bench ConnectionChurn -benchtime 1x ./sqlcount/mysqlwire/
//
// MYSQL_BENCH_SECONDS (default 4) and MYSQL_BENCH_ROUNDS (default 3) tune
// it.
func BenchmarkConnectionChurn(b *testing.B) {
	seconds := envInt("MYSQL_BENCH_SECONDS", 4)
	rounds := envInt("MYSQL_BENCH_ROUNDS", 3)
	s := mariadbtest.New(b)
	db, err := s.CreateDatabase(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	_, counter := startBenchCounter(b, s.Addr(), nil)
	haproxy, _ := startHAProxy(b, s.Addr())

	targets := []struct{ name, addr string }{{"direct", s.Addr()}, {"sqlcount", counter}, {"haproxy", haproxy}}
	qps := map[string][]float64{}
	var ratios []float64
	b.ResetTimer()
	for range b.N {
		for r := range rounds {
			for _, tg := range inTurn(r, targets) {
				qps[tg.name] = append(qps[tg.name], churn(b, mariadbtest.User+":"+mariadbtest.Password+"@tcp("+tg.addr+")/"+db, time.Duration(seconds)*time.Second))
			}
			ratios = append(ratios, qps["sqlcount"][r]/qps["haproxy"][r])
		}
	}
	b.StopTimer()
	med := median
	b.ReportMetric(med(qps["direct"]), "direct-qps")
	b.ReportMetric(med(qps["sqlcount"]), "sqlcount-qps")
	b.ReportMetric(med(qps["haproxy"]), "haproxy-qps")
	b.ReportMetric(med(ratios), "sqlcount/haproxy")
	b.Logf("a new connection per SELECT 1, 4 clients, %d s × %d rounds: direct %.0f qps %.0f, sqlcount %.0f qps %.0f, haproxy %.0f qps %.0f; sqlcount/haproxy: median of the rounds' ratios %.3f %.3f",
		seconds, rounds, med(qps["direct"]), qps["direct"], med(qps["sqlcount"]), qps["sqlcount"], med(qps["haproxy"]), qps["haproxy"], med(ratios), ratios)
}

// churn runs SELECT 1 on a new connection each time from 4 clients for d,
// and returns the queries per second.
func churn(b *testing.B, dsn string, d time.Duration) float64 {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxIdleConns(0)
	var n atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	end := time.Now().Add(d)
	for range 4 {
		wg.Go(func() {
			for time.Now().Before(end) {
				var x int
				if err := db.QueryRow("SELECT 1").Scan(&x); err != nil {
					errs <- err
					return
				}
				n.Add(1)
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	return float64(n.Load()) / d.Seconds()
}
