package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/authtest"
	"github.com/replaykit/replay/snapshots"
)

// transactionsSnapshot writes a recording of n clients' POST
// /transactions/random and GET of the id its answer held, their
// Authorization redacted with the scheme kept.
func transactionsSnapshot(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tx.snap")
	w, err := snapshots.Create(path, snapshots.Options{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := range n {
		id := fmt.Sprintf("0000%04d-1111-4222-8333-444455556666", i)
		start = start.Add(10 * time.Millisecond)
		w.AddExchange(&snapshots.Exchange{Direction: snapshots.Inbound, Protocol: "http", Service: "svc:8080", Start: start,
			Duration: time.Millisecond, Method: "POST", URL: "http://svc:8080/transactions/random",
			RequestHeader: http.Header{"Authorization": {"Bearer " + snapshots.Redacted}, "Content-Type": {"application/json"}},
			RequestBody:   []byte(`{}`), Status: 201,
			ResponseHeader: http.Header{"Content-Type": {"application/json"}}, ResponseBody: []byte(`{"id":"` + id + `","amount":42}`)})
		start = start.Add(10 * time.Millisecond)
		w.AddExchange(&snapshots.Exchange{Direction: snapshots.Inbound, Protocol: "http", Service: "svc:8080", Start: start,
			Duration: time.Millisecond, Method: "GET", URL: "http://svc:8080/transactions/" + id,
			RequestHeader: http.Header{"Authorization": {"Bearer " + snapshots.Redacted}}, Status: 200,
			ResponseHeader: http.Header{"Content-Type": {"application/json"}}, ResponseBody: []byte(`{"id":"` + id + `","amount":42}`)})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// authStack starts an OpenID provider with 2 s tokens and the resource
// service trusting it.
func authStack(t *testing.T) (*authtest.Issuer, *authtest.Resource, string) {
	t.Helper()
	iss := authtest.StartIssuer(t, 2*time.Second)
	rs := authtest.NewResource(iss)
	srv := httptest.NewServer(rs)
	t.Cleanup(srv.Close)
	return iss, rs, srv.URL
}

// cmdlines watches the process tree of pid until stop is closed and
// returns every command line seen (/proc/PID/cmdline).
func cmdlines(pid int, stop <-chan struct{}) []string {
	seen := map[string]bool{}
	for {
		for _, p := range descendants(pid) {
			if b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline"); err == nil && len(b) > 0 {
				seen[string(bytes.ReplaceAll(b, []byte{0}, []byte{' '}))] = true
			}
		}
		select {
		case <-stop:
			var out []string
			for c := range seen {
				out = append(out, c)
			}
			return out
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// descendants returns pid and its descendants (the children of every
// thread: a Go process starts them from any).
func descendants(pid int) []int {
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", out[i]))
		for _, file := range files {
			b, _ := os.ReadFile(file)
			for _, f := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(f); err == nil {
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// runWatched runs the replay binary with env added, and returns its exit
// code, its output and the command lines of its process tree.
func runWatched(t *testing.T, bin string, env []string, args ...string) (int, string, []string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var lines []string
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); lines = cmdlines(cmd.Process.Pid, stop) }()
	err := cmd.Wait()
	close(stop)
	wg.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), lines
}

// noSecrets fails when a secret is in a file under dir, in out or in a
// command line.
func noSecrets(t *testing.T, secrets []string, dir, out string, lines []string) {
	t.Helper()
	filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(path)
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s holds a secret (%.12s…)", path, s)
			}
		}
		return nil
	})
	for _, s := range secrets {
		if strings.Contains(out, s) {
			t.Errorf("the output holds a secret (%.12s…)", s)
		}
		for _, l := range lines {
			if strings.Contains(l, s) {
				t.Errorf("command line %q holds a secret", l)
			}
		}
	}
}

// `replay run --oauth2-…` with --shards 2 --local in the open model, and
// `--token-cmd` in the closed model, against a real OpenID provider whose
// JWTs live 2 s and a service checking them: no 401, every id the replayed
// POSTs created read back (no 404), the link listed; neither the secret nor
// a token in the run files, the reports or a command line.
func TestRunAuthenticatedTrafficWithFreshTokensAndCorrelatedIds(t *testing.T) {
	bin := buildReplay(t)
	iss, rs, target := authStack(t)
	snap := transactionsSnapshot(t, 10)
	dir := t.TempDir()
	cases := []struct {
		name string
		env  []string
		args []string
	}{
		{"oauth2, open model, 2 local shards", []string{"REPLAY_TEST_SECRET=" + authtest.ClientSecret},
			[]string{"--oauth2-token-url", iss.TokenURL, "--oauth2-client-id", authtest.ClientID, "--oauth2-scope", "openid",
				"--oauth2-client-secret-env", "REPLAY_TEST_SECRET", "--rate", "100/s", "--shards", "2", "--local"}},
		{"token command, closed model", []string{"REPLAY_TEST_SECRET=" + authtest.ClientSecret},
			// The secret goes to curl on its standard input (printf is a
			// shell builtin): not in a command line either.
			[]string{"--token-cmd", `printf 'user = "` + authtest.ClientID + `:%s"\n' "$REPLAY_TEST_SECRET" | curl -sf -K - -d grant_type=client_credentials -d scope=openid ` + iss.TokenURL + ` | jq -r .access_token`,
				"--vus", "4"}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			unauthorized, notFound := rs.Unauthorized.Load(), rs.NotFound.Load()
			out := filepath.Join(dir, strconv.Itoa(i)+".run")
			args := append([]string{"run", "--snapshot", snap, "--target", target, "--duration", "5s", "--out", out,
				"--format", "text,json", "--report-dir", filepath.Join(dir, "report"+strconv.Itoa(i))}, c.args...)
			code, stdout, lines := runWatched(t, bin, c.env, args...)
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, stdout)
			}
			if st := statuses(t, out); st[401] != 0 || st[404] != 0 {
				t.Errorf("the run file's statuses %v; want no 401 or 404", st)
			}
			if n := rs.NotFound.Load() - notFound; n != 0 {
				t.Errorf("the service answered 404 ×%d; want none\n%s", n, stdout)
			}
			if !strings.Contains(stdout, "Link: $.id of POST /transactions/random → path of GET /transactions/{id}: ") {
				t.Errorf("the report lists no link:\n%s", stdout)
			}
			run, err := snapshots.OpenRun(out)
			if err != nil {
				t.Fatal(err)
			}
			info := run.Info()
			run.Close()
			if st := info.State; st == nil || len(st.Links) != 1 || st.Links[0].Resolved != st.Links[0].Requests || st.Links[0].Requests < 50 {
				t.Errorf("run file state %+v; want the link resolved every time", st)
			} else if n := rs.Unauthorized.Load() - unauthorized; n != st.TokenRetries {
				// A loaded machine can delay a request past its token's
				// expiry: then it is retried, and counted apart.
				t.Errorf("the service answered 401 ×%d (%s), %d retried; want each retried", n, rs.Refusal(), st.TokenRetries)
			}
			if rs.Tokens() < 2 {
				t.Errorf("the service saw %d tokens; want them refreshed", rs.Tokens())
			}
			noSecrets(t, append(rs.Seen(), authtest.ClientSecret), dir, stdout, lines)
			if strings.Contains(c.name, "shards") && len(lines) < 3 {
				t.Errorf("saw %d command lines; want the shards' too", len(lines))
			}
		})
	}
}

// A recording whose Authorization was redacted, replayed with no token
// source against a service that wants one: the report says why the
// requests failed and what to give.
func TestRunRedactedAuthorizationSaysWhatToGive(t *testing.T) {
	bin := buildReplay(t)
	_, _, target := authStack(t)
	snap := transactionsSnapshot(t, 2)
	code, out := runBin(t, bin, "run", "--snapshot", snap, "--target", target, "--iterations", "1", "--out", filepath.Join(t.TempDir(), "r.run"))
	if code != 99 {
		t.Errorf("exit %d; want 99 (the run failed)\n%s", code, out)
	}
	if !strings.Contains(out, "the recording's Authorization was redacted; give --token-cmd or --oauth2-") {
		t.Errorf("the report does not say why:\n%s", out)
	}
}

// A comparison of two builds of the authenticated service, the candidate
// 30 ms slower, with OAuth2 tokens that live 2 s: a regression on both
// endpoints, with no 401 and no 404 on either side, and each side's links
// listed.
func TestCompareAuthenticatedSlowerCandidateIsARegression(t *testing.T) {
	iss, base, baseURL := authStack(t)
	cand := authtest.NewResource(iss)
	cand.Delay = 30 * time.Millisecond
	candSrv := httptest.NewServer(cand)
	defer candSrv.Close()
	t.Setenv("OAUTH2_CLIENT_SECRET", authtest.ClientSecret)
	snap := transactionsSnapshot(t, 5)
	dir := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := replayCompare(t, "--snapshot", snap, "--baseline-url", baseURL, "--candidate-url", candSrv.URL,
		"--oauth2-token-url", iss.TokenURL, "--oauth2-client-id", authtest.ClientID,
		"--duration", "3s", "--warmup", "0s", "--vus", "2", "--format", "json", "--out", dir)
	if code != exitRegression {
		t.Fatalf("exit %d, want 99; stderr %s\n%s", code, stderr, stdout)
	}
	var doc compareJSON
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	if v := verdicts(doc); v["POST /transactions/random"] != "regression" || v["GET /transactions/{id}"] != "regression" {
		t.Errorf("verdicts %v; want both endpoints a regression", v)
	}
	for side, rs := range map[string]*authtest.Resource{"baseline": base, "candidate": cand} {
		path := filepath.Join(dir, side+".run")
		st := statuses(t, path)
		run, err := snapshots.OpenRun(path)
		if err != nil {
			t.Fatal(err)
		}
		var retried int64
		if s := run.Info().State; s != nil {
			retried = s.TokenRetries
		}
		run.Close()
		if st[401] != 0 || st[404] != 0 || rs.Unauthorized.Load() != retried || rs.NotFound.Load() != 0 || rs.Created.Load() == 0 {
			t.Errorf("%s: statuses %v; the service answered 401 ×%d (%d retried), 404 ×%d, %d created; want no 401 or 404",
				side, st, rs.Unauthorized.Load(), retried, rs.NotFound.Load(), rs.Created.Load())
		}
		if !strings.Contains(stdout, side+": Link: $.id of POST /transactions/random → path of GET /transactions/{id}") {
			t.Errorf("the report lists no link for the %s:\n%s", side, stdout)
		}
	}
}

func TestStateFlagUsageErrors(t *testing.T) {
	snap := runSnapshot(t, "GET /a")
	base := []string{"--snapshot", snap, "--out", filepath.Join(t.TempDir(), "x.run"), "--target", "http://127.0.0.1:1"}
	t.Setenv("OAUTH2_CLIENT_SECRET", "")
	oauth := []string{"--oauth2-token-url", "http://127.0.0.1:1/token", "--oauth2-client-id", "c"}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"two sources", append([]string{"--token-cmd", "echo t"}, oauth...), "give one token source"},
		{"url without id", []string{"--oauth2-token-url", "http://x/token"}, "--oauth2-token-url and --oauth2-client-id go together"},
		{"no secret", oauth, "set it in $OAUTH2_CLIENT_SECRET"},
		{"no secret in the named variable", append(oauth, "--oauth2-client-secret-env", "NO_SUCH_VARIABLE"), "set it in $NO_SUCH_VARIABLE"},
		{"bad url", []string{"--oauth2-token-url", "x/token", "--oauth2-client-id", "c"}, "want an http:// or https:// URL"},
		{"ttl without command", []string{"--token-ttl", "1m"}, "--token-ttl: give it with --token-cmd"},
		{"header without source", []string{"--token-header", "X-Token"}, "give --token-cmd or --oauth2-token-url"},
		{"format without {token}", []string{"--token-cmd", "echo t", "--token-format", "Bearer x"}, "want {token}"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := replayRun(t, append(base, c.args...)...)
			if code != 2 || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
				t.Errorf("exit %d, stderr %q; want 2 and one line with %q", code, stderr, c.want)
			}
		})
	}
}

// statuses counts a run file's results by status.
func statuses(t *testing.T, path string) map[int]int {
	t.Helper()
	r, err := snapshots.OpenRun(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := map[int]int{}
	for res, err := range r.Results(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		n[res.Status]++
	}
	return n
}

// A comparison of a recording whose Authorization was redacted, with no
// token source: inconclusive, a comparison that could not be made (exit
// 1), saying why and what to give; never a verdict resting on auth
// failures.
func TestCompareWithoutTokensIsInconclusiveAndSaysWhy(t *testing.T) {
	_, _, target := authStack(t)
	snap := transactionsSnapshot(t, 2)
	code, stdout, stderr := replayCompare(t, "--snapshot", snap, "--baseline-url", target, "--candidate-url", target,
		"--duration", "1s", "--warmup", "0s", "--vus", "1", "--out", filepath.Join(t.TempDir(), "out"))
	if code != 1 || !strings.Contains(stderr, "compare: 2 auth faults, so the figures do not measure what they claim; the first: the baseline: ") {
		t.Fatalf("exit %d; stderr %s\n%s", code, stderr, stdout)
	}
	for _, want := range []string{"Inconclusive: requests were refused for want of a credential", "the baseline: ", "the candidate: ",
		"the recording's Authorization was redacted; give --token-cmd or --oauth2-", "Give both builds tokens"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the report lacks %q:\n%s", want, stdout)
		}
	}
}
