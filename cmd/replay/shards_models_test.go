package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// loadTarget is a loopback app that counts the requests it receives, per
// path, and the most it held at once; each answer takes delay.
type loadTarget struct {
	*httptest.Server
	mu       sync.Mutex
	paths    []string
	inflight int
	peak     int
}

func newLoadTarget(t *testing.T, delay time.Duration) *loadTarget {
	t.Helper()
	lt := &loadTarget{}
	lt.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lt.mu.Lock()
		lt.paths = append(lt.paths, r.URL.Path)
		lt.inflight++
		lt.peak = max(lt.peak, lt.inflight)
		lt.mu.Unlock()
		time.Sleep(delay)
		lt.mu.Lock()
		lt.inflight--
		lt.mu.Unlock()
		fmt.Fprint(w, `{}`)
	}))
	t.Cleanup(lt.Close)
	return lt
}

// received returns the paths received so far, sorted, and the peak of
// requests in flight, and starts counting afresh.
func (lt *loadTarget) received() ([]string, int) {
	lt.mu.Lock()
	defer lt.mu.Unlock()
	p, peak := lt.paths, lt.peak
	lt.paths, lt.peak = nil, 0
	slices.Sort(p)
	return p, peak
}

// orderRequests is n recorded requests, GET /orders/0 to /orders/(n-1),
// 10 ms apart.
func orderRequests(n int) []string {
	reqs := make([]string, n)
	for i := range reqs {
		reqs[i] = "GET /orders/" + strconv.Itoa(i)
	}
	return reqs
}

// In every load model the N shards of a plan send, together, exactly what
// one process sends: the same recorded requests, as many times each — by
// hand (--shard k/N, one after the other, without a barrier) and with
// --shards N --local. The target counts what it received.
func TestShardsSendWhatOneProcessSends(t *testing.T) {
	bin, dir := buildReplay(t), t.TempDir()
	snap := runSnapshot(t, orderRequests(30)...)
	tg := newLoadTarget(t, 0)
	for _, tc := range []struct {
		model string
		load  []string
		want  int
	}{
		{"closed, iterations × VUs", []string{"--iterations", "2", "--vus", "3"}, 60},
		{"closed, more VUs than shards", []string{"--iterations", "3", "--vus", "5"}, 90},
		{"open, rate × duration", []string{"--rate", "200/s", "--duration", "300ms"}, 60},
		{"open, iterations", []string{"--rate", "500/s", "--iterations", "2"}, 60},
		{"as recorded", []string{"--speed", "4"}, 30},
		{"as recorded, duration", []string{"--speed", "1", "--duration", "145ms"}, 15},
		{"as recorded, iterations", []string{"--speed", "8", "--iterations", "2"}, 60},
	} {
		t.Run(tc.model, func(t *testing.T) {
			run := func(name string, extra ...string) []string {
				t.Helper()
				args := append([]string{"run", "--snapshot", snap, "--target", tg.URL, "--out", filepath.Join(dir, name+".run")}, tc.load...)
				if code, out := runBin(t, bin, append(args, extra...)...); code != 0 {
					t.Fatalf("%s: exit %d\n%s", name, code, out)
				}
				got, _ := tg.received()
				return got
			}
			id := strings.NewReplacer(" ", "", ",", "", "×", "x").Replace(tc.model)
			single := run(id + "-single")
			if len(single) != tc.want {
				t.Fatalf("one process sent %d requests, want %d", len(single), tc.want)
			}
			var byHand []string
			for k := range 3 {
				byHand = append(byHand, run(id+"-shard"+strconv.Itoa(k), "--shard", strconv.Itoa(k)+"/3")...)
			}
			slices.Sort(byHand)
			if diff := cmp.Diff(single, byHand); diff != "" {
				t.Errorf("--shard 0/3, 1/3, 2/3 sent %d requests, one process %d (-single +shards):\n%s", len(byHand), len(single), diff)
			}
			local := run(id+"-local", "--shards", "3", "--local")
			if diff := cmp.Diff(single, local); diff != "" {
				t.Errorf("--shards 3 --local sent %d requests, one process %d (-single +shards):\n%s", len(local), len(single), diff)
			}
		})
	}
}

// A ramp's shards hold, together, the plan's virtual users: as many
// requests in flight at the target as one process at the plateau, never
// more, and the merged run lasts the stages' sum.
func TestShardsStagesHoldThePlansVUs(t *testing.T) {
	bin, dir := buildReplay(t), t.TempDir()
	snap := runSnapshot(t, orderRequests(10)...)
	tg := newLoadTarget(t, 20*time.Millisecond)
	stages := []string{"--stage", "200ms:3", "--stage", "300ms:3", "--format", "json"}
	for _, extra := range [][]string{nil, {"--shards", "3", "--local"}} {
		out := filepath.Join(dir, strconv.Itoa(len(extra))+".run")
		args := append([]string{"run", "--snapshot", snap, "--target", tg.URL, "--out", out}, stages...)
		code, stdout := runBin(t, bin, append(args, extra...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", extra, code, stdout)
		}
		paths, peak := tg.received()
		if peak != 3 || len(paths) == 0 {
			t.Errorf("%v: the target held at most %d requests at once (%d in all), want the plan's 3", extra, peak, len(paths))
		}
		if d := runDuration(t, stdout[strings.Index(stdout, "{"):]); d < 0.47 || d > 10 {
			t.Errorf("%v: the run lasted %.3f s, want the stages' 0.5 s", extra, d)
		}
	}
	// A plan that never reaches one user per shard is bad usage, before
	// any shard starts.
	for i, extra := range [][]string{{"--shards", "3", "--local"}, {"--shard", "2/3"}} {
		args := []string{"run", "--snapshot", snap, "--target", tg.URL, "--out", filepath.Join(dir, "few"+strconv.Itoa(i)+".run"), "--stage", "100ms:2", "--stage", "100ms:1"}
		code, out := runBin(t, bin, append(args, extra...)...)
		if code != 2 || !strings.Contains(out, "--stage targets peak at 2 virtual users, fewer than the 3 shards") || strings.Count(strings.TrimSpace(out), "\n") != 0 {
			t.Errorf("%v with a peak of 2 users: exit %d, %q; want exit 2 and one line naming --stage", extra, code, out)
		}
	}
	if paths, _ := tg.received(); len(paths) != 0 {
		t.Errorf("refused plans sent %d requests", len(paths))
	}
}

// runDuration is the duration_s of `replay run --format json`.
func runDuration(t *testing.T, stdout string) float64 {
	t.Helper()
	var v struct {
		DurationS float64 `json:"duration_s"`
	}
	if err := json.Unmarshal([]byte(stdout), &v); err != nil {
		t.Fatalf("not the run JSON: %v\n%s", err, stdout)
	}
	return v.DurationS
}
