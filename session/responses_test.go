package session

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/replaykit/replay/analyzer/respdiff"
	"github.com/replaykit/replay/internal/redact"
	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/snapshots"
)

// TestRunKeepsAnswers: a run keeps its build's answers in its run file (a
// sample with secrets redacted, hashes of the rest), and with
// CheckResponses compares them with the snapshot's recorded answers: the
// same build passes, one that answers otherwise fails naming the path;
// report RUN checks again with the recorded rules.
func TestRunKeepsAnswers(t *testing.T) {
	var typ atomic.Bool // the build answers "id" as a string
	var n atomic.Int64
	answer := func(path string) string {
		id := `1`
		if typ.Load() {
			id = `"1"`
		}
		return fmt.Sprintf(`{"id":%s,"path":%q,"token":"tok-%d","served":%d}`, id, path, n.Add(1), n.Load())
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, answer(r.URL.Path))
	}))
	defer srv.Close()

	dir := t.TempDir()
	snap := filepath.Join(dir, "app.snap")
	sw, err := snapshots.Create(snap, snapshots.Options{Redactor: redact.New(redact.Config{})}) // as record writes
	if err != nil {
		t.Fatal(err)
	}
	ex := inbound("/a", "/b")
	for _, e := range ex {
		e.ResponseHeader = http.Header{"Content-Type": {"application/json"}}
		e.ResponseBody = []byte(answer(strings.TrimPrefix(e.URL, "http://app.local")))
		sw.AddExchange(e)
	}
	if err := sw.Close(); err != nil {
		t.Fatal(err)
	}
	run := func(name string, rules respdiff.Rules) *RunResult {
		res, err := Run(context.Background(), RunConfig{
			Config: Config{Snapshot: snap, Inbound: ex},
			Side:   SideConfig{Name: name, URL: srv.URL, RunPath: filepath.Join(dir, name+".run")},
			Plan:   replayer.LoadPlan{Iterations: 5}, CheckResponses: true, Rules: rules,
		})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := run("same", respdiff.Rules{})
	for _, n := range res.Notices() {
		t.Errorf("notice %q: every sampled request was answered twice", n)
	}
	if rc := res.Report.Responses; rc == nil || !rc.Passed() || rc.Compared < 4 || !res.Report.Passed() {
		t.Fatalf("the recorded build: %+v, want the 4 sampled answers as recorded (the hashed ones not: the recording holds redacted values)", rc)
	}
	rf, err := snapshots.OpenRun(filepath.Join(dir, "same.run"))
	if err != nil {
		t.Fatal(err)
	}
	defer rf.Close()
	samples, hashed := 0, int64(0)
	rf.Responses(func(s *snapshots.ResponseSample) error {
		samples++
		if !bytes.Contains(s.Body, []byte(`"token":"[REDACTED]"`)) || bytes.Contains(s.Body, []byte("tok-")) {
			t.Errorf("sample of %d keeps the secret: %s", s.ExchangeID, s.Body)
		}
		return nil
	})
	rf.ResponseHashes(func(h snapshots.ResponseHash) error { hashed += h.Count; return nil })
	if samples != 4 || hashed != 6 {
		t.Errorf("run file: %d samples, %d answers hashed; want 4 and 6", samples, hashed)
	}

	typ.Store(true)
	res = run("typed", respdiff.Rules{})
	rc := res.Report.Responses
	if rc == nil || rc.Passed() || res.Report.Passed() || !strings.Contains(rc.Endpoints[0].Responses.Sentence(), "`$.id`: number 1 → string \"1\"") {
		t.Fatalf("a build answering otherwise: %+v", rc)
	}
	once, err := Run(context.Background(), RunConfig{
		Config: Config{Snapshot: snap, Inbound: ex},
		Side:   SideConfig{Name: "once", URL: srv.URL, RunPath: filepath.Join(dir, "once.run")},
		Plan:   replayer.LoadPlan{Iterations: 1}, CheckResponses: true,
	})
	if err != nil || len(once.Notices()) != 1 || !strings.Contains(once.Notices()[0], "2 of the 2 requests") {
		t.Errorf("each request answered once: %v, notices %q; want one saying noise could not be learned", err, once.Notices())
	}
	res = run("accepted", respdiff.Rules{Accept: []string{"$.id"}})
	if !res.Report.Passed() {
		t.Errorf("the change accepted: %+v", res.Report.Responses)
	}
	again, err := LoadRunWith(context.Background(), filepath.Join(dir, "accepted.run"), nil, 0)
	if err != nil || again.Responses == nil || !again.Passed() {
		t.Errorf("report RUN of the accepted run: %v, %+v", err, again)
	}
	again, err = LoadRunWith(context.Background(), filepath.Join(dir, "typed.run"), nil, 0)
	if err != nil || again.Responses == nil || again.Passed() {
		t.Errorf("report RUN of the changed run: %v, %+v", err, again)
	}
}
