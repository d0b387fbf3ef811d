package mysqlwire

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/cputime"
	"github.com/replaykit/replay/internal/mariadbtest"
	"github.com/replaykit/replay/snapshots"
	"github.com/replaykit/replay/sqlcount/sqlcore"
)

// BenchmarkSysbenchReadOnly runs sysbench's oltp_read_only (prepared
// statements, --rand-type=uniform) against MariaDB directly, through the
// MySQL counter and through HAProxy in TCP mode, in one run, the targets
// taking turns round after round, and reports the median TPS of each, the
// counter/HAProxy ratio (the median of the rounds' ratios: the two proxies
// run back to back in every round, so a load that drifts between rounds
// moves both) and each proxy's CPU per statement. Run it once:
//
//	go test -run '^$' -bench SysbenchReadOnly -benchtime 1x ./sqlcount/mysqlwire/
//
// MYSQL_BENCH_SECONDS (default 5), MYSQL_BENCH_ROUNDS (default 3),
// MYSQL_BENCH_THREADS (default 4) and MYSQL_BENCH_PS_MODE (auto or disable)
// tune it.
func BenchmarkSysbenchReadOnly(b *testing.B) {
	seconds := envInt("MYSQL_BENCH_SECONDS", 5)
	rounds := envInt("MYSQL_BENCH_ROUNDS", 3)
	threads := envInt("MYSQL_BENCH_THREADS", 4)
	psMode := os.Getenv("MYSQL_BENCH_PS_MODE")
	if psMode == "" {
		psMode = "auto"
	}
	s := mariadbtest.New(b)
	db, err := s.CreateDatabase(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	bench := func(addr, command string, extra ...string) string {
		host, port, _ := strings.Cut(addr, ":")
		args := append([]string{"oltp_read_only", "--db-driver=mysql", "--mysql-host=" + host, "--mysql-port=" + port,
			"--mysql-user=" + mariadbtest.User, "--mysql-password=" + mariadbtest.Password, "--mysql-db=" + db,
			"--tables=1", "--table-size=10000", "--rand-type=uniform"}, extra...)
		out, err := exec.Command("sysbench", append(args, command)...).CombinedOutput()
		if err != nil {
			b.Fatalf("sysbench %s: %v\n%s", command, err, out)
		}
		return string(out)
	}
	bench(s.Addr(), "prepare")

	var seen atomic.Int64
	p, counter := startBenchCounter(b, s.Addr(), func(*snapshots.Statement) { seen.Add(1) })
	haproxy, haproxyPID := startHAProxy(b, s.Addr())

	type target struct {
		name string
		addr string
		cpu  func() time.Duration
	}
	targets := []target{
		{"direct", s.Addr(), func() time.Duration { return 0 }},
		{"sqlcount", counter, cputime.Self},
		{"haproxy", haproxy, func() time.Duration { return processCPU(b, haproxyPID) }},
	}
	tps := map[string][]float64{}
	cpuPer := map[string][]float64{} // µs of proxy CPU per statement
	var ratios []float64             // counter/HAProxy within each round
	b.ResetTimer()
	for range b.N {
		for r := range rounds {
			for _, tg := range inTurn(r, targets) {
				cpu0 := tg.cpu()
				out := bench(tg.addr, "run", "--threads="+itoa(threads), "--time="+itoa(seconds), "--db-ps-mode="+psMode)
				cpu := tg.cpu() - cpu0
				t, q := parseSysbench(b, out)
				tps[tg.name] = append(tps[tg.name], t)
				cpuPer[tg.name] = append(cpuPer[tg.name], float64(cpu.Nanoseconds())/1000/float64(q))
			}
			// The two proxies ran back to back: their ratio within the round
			// cancels the load that drifts from round to round.
			ratios = append(ratios, tps["sqlcount"][r]/tps["haproxy"][r])
		}
	}
	b.StopTimer()
	med := median
	b.ReportMetric(med(tps["direct"]), "direct-tps")
	b.ReportMetric(med(tps["sqlcount"]), "sqlcount-tps")
	b.ReportMetric(med(tps["haproxy"]), "haproxy-tps")
	b.ReportMetric(med(ratios), "sqlcount/haproxy")
	b.ReportMetric(med(tps["sqlcount"])/med(tps["haproxy"]), "median-tps-ratio")
	b.ReportMetric(med(cpuPer["sqlcount"]), "sqlcount-cpu-µs/stmt")
	b.ReportMetric(med(cpuPer["haproxy"]), "haproxy-cpu-µs/stmt")
	b.Logf("sysbench oltp_read_only --db-ps-mode=%s, %d threads, %d s × %d rounds: direct %.0f tps %.0f, sqlcount %.0f tps %.0f, haproxy %.0f tps %.0f; sqlcount/haproxy: median of the rounds' ratios %.3f %.3f, ratio of the medians %.3f; CPU µs per statement: sqlcount %.1f, haproxy %.1f",
		psMode, threads, seconds, rounds, med(tps["direct"]), tps["direct"], med(tps["sqlcount"]), tps["sqlcount"], med(tps["haproxy"]), tps["haproxy"],
		med(ratios), ratios, med(tps["sqlcount"])/med(tps["haproxy"]), cpuPer["sqlcount"], cpuPer["haproxy"])
	if p.Stats().Statements == 0 || seen.Load() != p.Stats().Statements {
		b.Errorf("sqlcount counted %d statements, reported %d", p.Stats().Statements, seen.Load())
	}
}

// inTurn is the order of targets in round r: reversed every other round, so
// that neither proxy always follows the other.
func inTurn[T any](r int, targets []T) []T {
	order := slices.Clone(targets)
	if r%2 == 1 {
		slices.Reverse(order)
	}
	return order
}

// median is the middle of v (the upper one of an even count).
func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}

// startBenchCounter serves the counter in front of upstream as replay
// sqlcount runs it (an event loop per core), each statement reported to
// onStatement, until the benchmark ends; it returns the proxy and its
// address.
func startBenchCounter(b *testing.B, upstream string, onStatement func(*snapshots.Statement)) (*sqlcore.Proxy, string) {
	cfg := Config{Upstream: upstream, OnStatement: onStatement}
	sqlcore.OwnProcess(&cfg)
	p, err := sqlcore.New(cfg, New())
	if err != nil {
		b.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, l) }()
	b.Cleanup(func() { cancel(); <-done })
	return p, l.Addr().String()
}

// startHAProxy runs Debian's haproxy in TCP mode in front of upstream, with
// its defaults otherwise (one thread per CPU), and returns its address and
// process id.
func startHAProxy(b *testing.B, upstream string) (string, int) {
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		if _, err := os.Stat("/usr/sbin/haproxy"); err != nil {
			b.Fatal("haproxy not found (install Debian's haproxy)")
		}
		bin = "/usr/sbin/haproxy"
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cfg := fmt.Sprintf(`global
  maxconn 4096
defaults
  mode tcp
  timeout connect 5s
  timeout client 5m
  timeout server 5m
frontend mysql
  bind %s
  default_backend db
backend db
  server db1 %s
`, addr, upstream)
	path := filepath.Join(b.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "-db", "-f", path)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr, cmd.Process.Pid
		}
		if time.Now().After(deadline) {
			b.Fatalf("haproxy did not listen on %s:\n%s", addr, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func processCPU(b testing.TB, pid int) time.Duration {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	const ticks = 100 // USER_HZ
	return time.Duration(utime+stime) * time.Second / ticks
}

var (
	sysbenchTPS     = regexp.MustCompile(`transactions:\s+\d+\s+\(([0-9.]+) per sec\.\)`)
	sysbenchQueries = regexp.MustCompile(`queries:\s+(\d+)\s+\(`)
)

// parseSysbench returns the transactions per second and the queries of a
// sysbench run.
func parseSysbench(b testing.TB, out string) (float64, int64) {
	t, q := sysbenchTPS.FindStringSubmatch(out), sysbenchQueries.FindStringSubmatch(out)
	if t == nil || q == nil {
		b.Fatalf("no transactions or queries in sysbench output:\n%s", out)
	}
	tps, _ := strconv.ParseFloat(t[1], 64)
	n, _ := strconv.ParseInt(q[1], 10, 64)
	return tps, n
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func itoa(n int) string { return strconv.Itoa(n) }
