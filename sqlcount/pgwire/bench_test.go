package pgwire

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
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
	"github.com/replaykit/replay/internal/pgtest"
	"github.com/replaykit/replay/snapshots"
)

// BenchmarkPgbenchSelect runs pgbench -S (read-only, simple protocol, and
// with -M prepared) against the server directly, through sqlcount and
// through pgbouncer (session pooling) in one run, in interleaved rounds, and
// reports the median TPS of each and the ratios. Run it once:
//
//	go test -run '^$' -bench PgbenchSelect -benchtime 1x ./sqlcount/
//
// SQLCOUNT_BENCH_SECONDS (default 5), SQLCOUNT_BENCH_ROUNDS (default 3) and
// SQLCOUNT_BENCH_CLIENTS (default 4) tune it; SQLCOUNT_BENCH_TARGETS (e.g.
// "sqlcount") limits the targets, for profiling.
func BenchmarkPgbenchSelect(b *testing.B) {
	seconds := envInt("SQLCOUNT_BENCH_SECONDS", 5)
	rounds := envInt("SQLCOUNT_BENCH_ROUNDS", 3)
	clients := envInt("SQLCOUNT_BENCH_CLIENTS", 4)

	c := pgtest.New(b)
	runTool(b, "pgbench", "-i", "-q", "-s", "1", "-h", c.Host, "-p", itoa(c.Port), "-U", c.User, "postgres")

	// sqlcount, in process, reporting every statement as the recorder does.
	var seen atomic.Int64
	p, err := New(Config{Upstream: c.Addr(), OnStatement: func(*snapshots.Statement) { seen.Add(1) }})
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
	defer func() { cancel(); <-done }()

	bouncer, bouncerPID := startPgbouncer(b, c)

	// cpu returns the CPU time used so far by the proxy in front of the
	// target, or 0 when there is none.
	type target struct {
		name string
		port int
		cpu  func() time.Duration
	}
	targets := []target{
		{"direct", c.Port, func() time.Duration { return 0 }},
		{"sqlcount", l.Addr().(*net.TCPAddr).Port, cputime.Self},
		{"pgbouncer", bouncer, func() time.Duration { return processCPU(b, bouncerPID) }},
	}
	if only := os.Getenv("SQLCOUNT_BENCH_TARGETS"); only != "" {
		// For profiling: e.g. SQLCOUNT_BENCH_TARGETS=sqlcount.
		targets = slices.DeleteFunc(targets, func(tg target) bool { return !strings.Contains(only, tg.name) })
	}
	b.ResetTimer()
	for range b.N {
		for _, mode := range []string{"simple", "prepared"} {
			tps := map[string][]float64{}
			cpuPerTx := map[string][]float64{} // µs of proxy CPU per transaction
			for range rounds {
				for _, tg := range targets {
					cpu0 := tg.cpu()
					out := runTool(b, "pgbench", "-S", "-M", mode, "-T", itoa(seconds), "-c", itoa(clients), "-j", "2",
						"-n", "-h", "127.0.0.1", "-p", itoa(tg.port), "-U", c.User, "postgres")
					cpu := tg.cpu() - cpu0
					tps[tg.name] = append(tps[tg.name], parseTPS(b, out))
					if tx := parseTransactions(b, out); tx > 0 {
						cpuPerTx[tg.name] = append(cpuPerTx[tg.name], float64(cpu.Microseconds())/float64(tx))
					}
				}
			}
			cpuMed := map[string]float64{}
			for name, v := range cpuPerTx {
				slices.Sort(v)
				cpuMed[name] = v[len(v)/2]
			}
			med := map[string]float64{}
			for name, v := range tps {
				slices.Sort(v)
				med[name] = v[len(v)/2]
			}
			b.ReportMetric(med["direct"], mode+"-direct-tps")
			b.ReportMetric(med["sqlcount"], mode+"-sqlcount-tps")
			b.ReportMetric(med["pgbouncer"], mode+"-pgbouncer-tps")
			b.ReportMetric(med["sqlcount"]/med["pgbouncer"], mode+"-sqlcount/pgbouncer")
			b.ReportMetric(cpuMed["sqlcount"], mode+"-sqlcount-cpu-µs/tx")
			b.ReportMetric(cpuMed["pgbouncer"], mode+"-pgbouncer-cpu-µs/tx")
			b.Logf("proxy CPU per transaction (median): sqlcount %.1f µs %v, pgbouncer %.1f µs %v",
				cpuMed["sqlcount"], cpuPerTx["sqlcount"], cpuMed["pgbouncer"], cpuPerTx["pgbouncer"])
			b.Logf("pgbench -S -M %s, %d clients, %d s × %d rounds: direct %.0f tps (%v), sqlcount %.0f tps (%v) = %.2f× direct, pgbouncer %.0f tps (%v) = %.2f× direct; sqlcount/pgbouncer %.2f",
				mode, clients, seconds, rounds, med["direct"], tps["direct"], med["sqlcount"], tps["sqlcount"], med["sqlcount"]/med["direct"],
				med["pgbouncer"], tps["pgbouncer"], med["pgbouncer"]/med["direct"], med["sqlcount"]/med["pgbouncer"])
		}
	}
	b.StopTimer()
	if p.Stats().Statements == 0 || seen.Load() != p.Stats().Statements {
		b.Errorf("sqlcount counted %d statements, reported %d", p.Stats().Statements, seen.Load())
	}
}

var txLine = regexp.MustCompile(`number of transactions actually processed: ([0-9]+)`)

func parseTransactions(b testing.TB, out string) int64 {
	m := txLine.FindStringSubmatch(out)
	if m == nil {
		b.Fatalf("no transaction count in pgbench output:\n%s", out)
	}
	v, _ := strconv.ParseInt(m[1], 10, 64)
	return v
}

// processCPU returns the CPU time process pid has used, from /proc.
func processCPU(b testing.TB, pid int) time.Duration {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the command (which may hold spaces) start at state.
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	const ticks = 100 // USER_HZ
	return time.Duration(utime+stime) * time.Second / ticks
}

var tpsLine = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)

func parseTPS(b testing.TB, out string) float64 {
	m := tpsLine.FindStringSubmatch(out)
	if m == nil {
		b.Fatalf("no tps in pgbench output:\n%s", out)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// startPgbouncer runs pgbouncer in front of c (session pooling, trust) on a
// free port and returns the port. As root it runs as the postgres user.
func startPgbouncer(b testing.TB, c *pgtest.Cluster) (port, pid int) {
	b.Helper()
	exe, err := exec.LookPath("pgbouncer")
	if err != nil {
		for _, p := range []string{"/usr/sbin/pgbouncer", "/usr/bin/pgbouncer"} {
			if _, serr := os.Stat(p); serr == nil {
				exe = p
			}
		}
	}
	if exe == "" {
		b.Fatal("pgbouncer not found: install it (Debian: apt-get install pgbouncer)")
	}
	// Not b.TempDir: its parent is closed to the postgres user.
	dir, err := os.MkdirTemp("", "sqlcount-pgbouncer-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			b.Fatal("running as root needs a postgres user to run pgbouncer as")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			b.Fatal(err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	ini := fmt.Sprintf(`[databases]
postgres = host=%s port=%d dbname=postgres

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = session
max_client_conn = 200
default_pool_size = 50
logfile = %s
pidfile = %s
ignore_startup_parameters = extra_float_digits
`, c.Host, c.Port, port, filepath.Join(dir, "users.txt"), filepath.Join(dir, "pgbouncer.log"), filepath.Join(dir, "pgbouncer.pid"))
	for name, content := range map[string]string{"pgbouncer.ini": ini, "users.txt": fmt.Sprintf("%q \"\"\n", c.User)} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
		if cred != nil {
			os.Chown(path, int(cred.Uid), int(cred.Gid))
		}
	}
	cmd := exec.Command(exe, filepath.Join(dir, "pgbouncer.ini"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	b.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", itoa(port)), time.Second)
		if err == nil {
			conn.Close()
			return port, cmd.Process.Pid
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "pgbouncer.log"))
			b.Fatalf("pgbouncer exited: %s %s", out.String(), log)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			b.Fatal("pgbouncer did not start listening")
		}
	}
}
