package analyzer

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replaykit/replay/analyzer/respdiff"
	"github.com/replaykit/replay/snapshots"
)

// answerFunc is a build's answer to the recorded exchange id, the k-th
// time it is asked (k 0 or 1).
type answerFunc func(id int64, k int) string

// respTimes is how many answers respRun writes per exchange.
var respTimes = 2

// respRun writes a run file of synthetic results and, per endpoint with
// an answerFunc, two answers to each of exchanges 1 to 10, then hashes.
func respRun(t testing.TB, dir string, spec runSpec, eps []epSpec, answers map[string]answerFunc, hashes ...snapshots.ResponseHash) *snapshots.Run {
	t.Helper()
	info := spec.info()
	path := filepath.Join(dir, info.Name+".run")
	w, err := snapshots.CreateRun(path, info)
	if err != nil {
		t.Fatal(err)
	}
	for r, err := range synthResults(spec, eps) {
		if err != nil {
			t.Fatal(err)
		}
		w.Add(r)
	}
	for ep, f := range answers {
		for id := int64(1); id <= 10; id++ {
			for k := range respTimes {
				body := f(id, k)
				w.AddResponse(&snapshots.ResponseSample{ExchangeID: id, Endpoint: ep, Phase: snapshots.PhaseLoad, Status: 200,
					Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(body), BodySize: int64(len(body))})
			}
		}
	}
	w.AddResponseHashes(hashes)
	if err := w.Close(info); err != nil {
		t.Fatal(err)
	}
	r, err := snapshots.OpenRun(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

var served int

// servedAt is a timestamp that differs on every answer.
func servedAt() string {
	served++
	return fmt.Sprintf("2026-12-01T18:00:%02d.%03dZ", served%60, served)
}

// TestCompareRunsResponses: on real run files, a changed field's type is a
// regression explained by the behaviour sentence; timestamps are noise; an
// N+1 with a changed body gives the SQL evidence first; an endpoint with
// the same answers stays as it was.
func TestCompareRunsResponses(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	status := func(quote string) answerFunc {
		return func(id int64, k int) string {
			return fmt.Sprintf(`{"id":%s%d%s,"status":"paid","served_at":%q}`, quote, id, quote, servedAt())
		}
	}
	orders := func(items string) answerFunc {
		return func(id int64, k int) string { return fmt.Sprintf(`{"orders":[{"id":1,"items":%s}]}`, items) }
	}
	report := func(id int64, k int) string { return fmt.Sprintf(`{"total":%d,"at":%q}`, id*100, servedAt()) }
	slow := demoEndpoints()
	slow[0].sql = []snapshots.SQLCount{listSQL, {Fingerprint: itemsFP, Count: 50, Duration: 10 * ms}}
	slow[0].extra = 10 * ms
	base := respRun(t, dir, noisy("baseline", 5), demoEndpoints(), map[string]answerFunc{
		"GET /orders/{id}/status": status(""), "GET /orders": orders("3"), "GET /report": report})
	cand := respRun(t, dir, noisy("candidate", 5), slow, map[string]answerFunc{
		"GET /orders/{id}/status": status(`"`), "GET /orders": orders("[1,2,3]"), "GET /report": report})

	c, err := CompareRuns(ctx, base, cand, SummarizeOptions{}, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st := c.Endpoint("GET /orders/{id}/status")
	want := "`$.id`: number 1 → string \"1\" in 20 of 20 responses"
	if st.Verdict != Regression || st.Cause != CauseBehaviour || !strings.HasPrefix(st.Explanation, want+"; ") {
		t.Errorf("status endpoint: %s (%s) %q, want a behaviour regression explained by %q", st.Verdict, st.Cause, st.Explanation, want)
	}
	if r := st.Responses; r == nil || r.Compared != 20 || r.Differing != 20 || len(r.Ignored) != 1 || r.Ignored[0].Path != "$.served_at" {
		t.Errorf("status endpoint's responses: %+v", r)
	}
	o := c.Endpoint("GET /orders")
	if o.Cause != CauseNPlusOne || !strings.HasPrefix(o.Explanation, "N+1") ||
		!strings.HasSuffix(o.Explanation, "; `$.orders[*].items`: number 3 → array (3 items) in 20 of 20 responses") {
		t.Errorf("N+1 with a changed body: %s %q", o.Cause, o.Explanation)
	}
	if r := c.Endpoint("GET /report"); r.ResponseVerdict != Unchanged || r.Responses.Differing != 0 || r.Cause == CauseBehaviour {
		t.Errorf("report endpoint: %s, responses %s %+v", r.Cause, r.ResponseVerdict, r.Responses)
	}
	if c.Verdict != Regression {
		t.Errorf("verdict %s", c.Verdict)
	}

	// Accepted, the type change is no regression any more.
	c, err = CompareRuns(ctx, base, cand, SummarizeOptions{}, CompareOptions{Responses: respdiff.Rules{Accept: []string{"$.id"}}})
	if err != nil {
		t.Fatal(err)
	}
	if st := c.Endpoint("GET /orders/{id}/status"); st.Verdict == Regression || len(st.Responses.Accepted) != 1 {
		t.Errorf("accepted: %s %q, %+v", st.Verdict, st.Explanation, st.Responses)
	}
	// A bad rule is an error naming the flag.
	if _, err := CompareRuns(ctx, base, cand, SummarizeOptions{}, CompareOptions{Responses: respdiff.Rules{Ignore: []string{"id"}}}); err == nil ||
		!strings.Contains(err.Error(), `--ignore: path "id"`) {
		t.Errorf("bad rule: %v", err)
	}
}

// recordedSnapshot writes a snapshot of inbound exchanges 1 to 10 of
// endpoint, answered with body(id), and opens it.
func recordedSnapshot(t *testing.T, dir, endpoint string, body func(id int64) string) *snapshots.Snapshot {
	t.Helper()
	path := filepath.Join(dir, "recorded.snap")
	w, err := snapshots.Create(path, snapshots.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for id := int64(1); id <= 10; id++ {
		b := body(id)
		w.AddExchange(&snapshots.Exchange{ID: id, Direction: snapshots.Inbound, Protocol: "http", Service: "127.0.0.1:8080",
			Start: t0, Method: "GET", URL: fmt.Sprintf("http://127.0.0.1:8080/orders/%d/status", id), Endpoint: endpoint,
			Status: 200, ResponseHeader: http.Header{"Content-Type": {"application/json"}}, ResponseBody: []byte(b), ResponseBodySize: int64(len(b))})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := snapshots.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestCompareRunsRecordedNoise: a field both builds answer alike on their
// own but differently from each other, and from the recording, is noise
// when the comparison is given the recording; without it, a difference.
func TestCompareRunsRecordedNoise(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	const ep = "GET /orders/{id}/status"
	answer := func(node string) answerFunc {
		return func(id int64, k int) string { return fmt.Sprintf(`{"id":%d,"node":%q}`, id, node) }
	}
	eps := demoEndpoints()
	base := respRun(t, dir, noisy("baseline", 5), eps, map[string]answerFunc{ep: answer("a")})
	cand := respRun(t, dir, noisy("candidate", 5), eps, map[string]answerFunc{ep: answer("b")})
	snap := recordedSnapshot(t, dir, ep, func(id int64) string { return fmt.Sprintf(`{"id":%d,"node":"prod-7"}`, id) })

	c, err := CompareRuns(ctx, base, cand, SummarizeOptions{}, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if e := c.Endpoint(ep); e.Responses.Differing != 20 || e.Cause != CauseBehaviour {
		t.Errorf("without the recording: %d differing, cause %s", e.Responses.Differing, e.Cause)
	}
	c, err = CompareRuns(ctx, base, cand, SummarizeOptions{}, CompareOptions{Recorded: snap})
	if err != nil {
		t.Fatal(err)
	}
	e := c.Endpoint(ep)
	if e.Responses.Differing != 0 || len(e.Responses.Ignored) != 1 || e.Responses.Ignored[0].Reason != respdiff.ReasonRecording {
		t.Errorf("with the recording: %d differing, ignored %+v", e.Responses.Differing, e.Responses.Ignored)
	}
}

// TestCheckResponses: a build's answers against the recording: its own
// timestamps are noise; a changed field is named; a run without answers
// gives nil.
func TestCheckResponses(t *testing.T) {
	ctx := context.Background()
	const ep = "GET /orders/{id}/status"
	snap := recordedSnapshot(t, t.TempDir(), ep, func(id int64) string {
		return fmt.Sprintf(`{"id":%d,"status":"paid","at":"2025-03-01T12:00:00Z"}`, id)
	})
	build := func(status string) answerFunc {
		return func(id int64, k int) string {
			return fmt.Sprintf(`{"id":%d,"status":%q,"at":%q}`, id, status, servedAt())
		}
	}
	same := respRun(t, t.TempDir(), noisy("same", 5), demoEndpoints(), map[string]answerFunc{ep: build("paid")})
	rc, err := CheckResponses(ctx, same, snap, respdiff.Rules{})
	if err != nil {
		t.Fatal(err)
	}
	if !rc.Passed() || rc.Compared != 20 || len(rc.Endpoints) != 1 || rc.Endpoints[0].Responses.Ignored[0].Path != "$.at" {
		t.Errorf("same build: %+v", rc)
	}
	changed := respRun(t, t.TempDir(), noisy("changed", 5), demoEndpoints(), map[string]answerFunc{ep: build("PAID")})
	rc, err = CheckResponses(ctx, changed, snap, respdiff.Rules{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rc.Endpoints[0].Responses.Sentence(), "`$.status`: string \"paid\" → string \"PAID\" in 20 of 20 responses"; rc.Passed() || got != want {
		t.Errorf("changed build: passed %v, %q, want %q", rc.Passed(), got, want)
	}
	none := respRun(t, t.TempDir(), noisy("none", 5), demoEndpoints(), nil)
	if rc, err := CheckResponses(ctx, none, snap, respdiff.Rules{}); rc != nil || err != nil {
		t.Errorf("a run without answers: %+v, %v", rc, err)
	}
	if _, err := CheckResponses(ctx, same, snap, respdiff.Rules{Unordered: []string{"$.a["}}); err == nil || !strings.Contains(err.Error(), "--unordered") {
		t.Errorf("bad rule: %v", err)
	}
}

// TestCheckResponsesMany: with more exchanges than it reads one by one,
// CheckResponses streams the snapshot; answers beyond the sample compare
// by hash with the recorded bodies; an exchange the snapshot lacks is an
// error.
func TestCheckResponsesMany(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	const ep = "GET /orders/{id}/status"
	body := func(id int64) string { return fmt.Sprintf(`{"id":%d,"status":"paid"}`, id) }
	path := filepath.Join(dir, "many.snap")
	w, err := snapshots.Create(path, snapshots.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for id := int64(1); id <= 300; id++ {
		b := body(id)
		w.AddExchange(&snapshots.Exchange{ID: id, Direction: snapshots.Inbound, Protocol: "http", Service: "127.0.0.1:8080", Start: t0,
			Method: "GET", URL: fmt.Sprintf("http://127.0.0.1:8080/orders/%d/status", id), Endpoint: ep, Status: 200,
			ResponseHeader: http.Header{"Content-Type": {"application/json"}}, ResponseBody: []byte(b), ResponseBodySize: int64(len(b))})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	snap, err := snapshots.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	run := func(name string, extra int64) *snapshots.Run {
		var hs []snapshots.ResponseHash
		for id := int64(11); id <= 300+extra; id++ {
			var h snapshots.BodyHasher
			h.Write([]byte(body(id)))
			if id == 299 {
				h.Write([]byte(" "))
			}
			hs = append(hs, snapshots.ResponseHash{ExchangeID: id, Endpoint: ep, Status: 200, Hash: h.Sum64(), Count: 2})
		}
		return respRun(t, dir, noisy(name, 5), demoEndpoints(), map[string]answerFunc{ep: func(id int64, k int) string { return body(id) }}, hs...)
	}
	rc, err := CheckResponses(ctx, run("hashed", 0), snap, respdiff.Rules{})
	if err != nil {
		t.Fatal(err)
	}
	s := rc.Endpoints[0].Responses
	if s.Sampled != 20 || s.Hashed != 580 || s.Differing != 2 || s.Sentence() != "body differs by hash in 2 of 580 answers beyond the sample" {
		t.Errorf("sampled %d, hashed %d, differing %d, %q", s.Sampled, s.Hashed, s.Differing, s.Sentence())
	}
	if _, err := CheckResponses(ctx, run("beyond", 1), snap, respdiff.Rules{}); err == nil || !strings.Contains(err.Error(), "1 replayed exchanges (e.g. 301) are not in the snapshot") {
		t.Errorf("an exchange the snapshot lacks: %v", err)
	}
}
