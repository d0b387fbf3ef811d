package replayer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replaykit/replay/recorder"
	"github.com/replaykit/replay/snapshots"
)

// notesService keeps each login's notes apart: POST /login sets a session
// cookie, POST /notes creates a note of that session ({"id": ...}), GET
// /notes/{id} reads it back, 404 when the session has no such note.
type notesService struct {
	mu       sync.Mutex
	sessions map[string]map[string]bool
	notFound atomic.Int64
}

func newID16() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func (s *notesService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Method == http.MethodPost && r.URL.Path == "/login" {
		sid := newID16()
		s.sessions[sid] = map[string]bool{}
		http.SetCookie(w, &http.Cookie{Name: "session", Value: sid, Path: "/"})
		w.WriteHeader(http.StatusNoContent)
		return
	}
	c, err := r.Cookie("session")
	if err != nil || s.sessions[c.Value] == nil {
		http.Error(w, "no session", http.StatusUnauthorized)
		return
	}
	notes := s.sessions[c.Value]
	switch id, ok := strings.CutPrefix(r.URL.Path, "/notes/"); {
	case r.Method == http.MethodPost && r.URL.Path == "/notes":
		id := newID16()
		notes[id] = true
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]string{"id": id})
	case r.Method == http.MethodGet && ok && notes[id]:
		io.WriteString(w, `{"id":"`+id+`"}`)
	default:
		s.notFound.Add(1)
		http.NotFound(w, r)
	}
}

// recordTwoClients records, through the inbound recorder, two clients on
// a connection each that log in, create notes and read them back,
// interleaved: the first one creates a note before the second one logs in,
// and reads it back after.
func recordTwoClients(t *testing.T, app http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(app)
	t.Cleanup(srv.Close)
	target, _ := url.Parse(srv.URL)
	path := filepath.Join(t.TempDir(), "two.snap")
	sess, err := recorder.NewSession(recorder.SessionConfig{Snapshot: path,
		Inbound: []recorder.SessionInbound{{Listen: "127.0.0.1:0", Target: target}}})
	if err != nil {
		t.Fatal(err)
	}
	sess.Start()
	front := "http://" + sess.InboundAddrs()[0].String()
	type clientOf struct {
		c      *http.Client
		cookie string
		last   string
	}
	var cs [2]*clientOf
	for i := range cs {
		cs[i] = &clientOf{c: &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}}
		defer cs[i].c.CloseIdleConnections()
	}
	do := func(cl *clientOf, method, p string) {
		req, _ := http.NewRequest(method, front+p, nil)
		if cl.cookie != "" {
			req.Header.Set("Cookie", cl.cookie)
		}
		res, err := cl.c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var body struct{ ID string }
		json.NewDecoder(res.Body).Decode(&body)
		for _, c := range res.Cookies() {
			cl.cookie = c.Name + "=" + c.Value
		}
		if body.ID != "" {
			cl.last = body.ID
		}
		if res.StatusCode >= 400 {
			t.Fatalf("recording: %s %s: %s", method, p, res.Status)
		}
	}
	for _, c := range cs {
		do(c, "POST", "/login")
		do(c, "POST", "/notes") // the one before the other's login
	}
	for _, c := range cs {
		do(c, "GET", "/notes/"+c.last)
	}
	for _, c := range cs {
		do(c, "POST", "/notes")
	}
	for _, c := range cs {
		do(c, "GET", "/notes/"+c.last)
	}
	if err := sess.Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCorrelationKeepsEachConnectionsClient: two clients recorded on
// their own connections, interleaved, with no --session-key: each one's
// requests take the cookie and ids of its own answers, and the replay
// reads every note back (0 × 404).
func TestCorrelationKeepsEachConnectionsClient(t *testing.T) {
	ctx := context.Background()
	path := recordTwoClients(t, &notesService{sessions: map[string]map[string]bool{}})
	snap, err := snapshots.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	conns := map[int64]int{}
	for e, err := range snap.Exchanges(ctx, snapshots.Filter{}) {
		if err != nil {
			t.Fatal(err)
		}
		conns[e.ClientConn]++
	}
	if len(conns) != 2 || conns[0] != 0 {
		t.Fatalf("requests by recorded connection %v; want two connections of 5 requests", conns)
	}
	live := &notesService{sessions: map[string]map[string]bool{}}
	srv := httptest.NewServer(live)
	defer srv.Close()
	src, err := NewSource(ctx, snap, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := newReplayer(t, Config{Target: srv.URL, Source: src, State: StateConfig{Correlate: true}})
	var s statusSink
	if _, err := r.Run(ctx, LoadPlan{VUs: 2, Iterations: 3}, &s); err != nil {
		t.Fatal(err)
	}
	if s.status[404] != 0 || s.status[401] != 0 || s.status[200] != 12 || len(s.errs) > 0 {
		t.Errorf("statuses %v, errors %v; want every note read back (12 × 200), no 404 or 401", s.status, s.errs)
	}
	st := r.State()
	want := fmt.Sprintf("%s → %s", "$.id of POST /notes", "path of GET /notes/{id}")
	found := false
	for _, l := range st.Links {
		found = found || l.From+" → "+l.To == want && l.Resolved == l.Requests && l.Requests == 12
	}
	if !found {
		t.Errorf("links %+v; want %s resolved 12 of 12", st.Links, want)
	}
}

// slowCreates answers POST /items after delay with a new id, and GET
// /items/{id} with 404 for an id it never made.
func slowCreates(delay time.Duration) (*httptest.Server, *atomic.Int64) {
	var mu sync.Mutex
	ids := map[string]bool{}
	var notFound atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			time.Sleep(delay)
			id := newID16() + "-4000-8000-000000000000"
			mu.Lock()
			ids[id] = true
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"`+id+`"}`)
			return
		}
		mu.Lock()
		ok := ids[strings.TrimPrefix(r.URL.Path, "/items/")]
		mu.Unlock()
		if !ok {
			notFound.Add(1)
			http.NotFound(w, r)
		}
	}))
	return srv, &notFound
}

// createThenRead is a recording of a POST /items and a GET of the id it
// answered, 10 ms apart.
func createThenRead() []*snapshots.Exchange {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	id := "0123456789abcdef-4000-8000-000000000000"
	return []*snapshots.Exchange{
		{ID: 1, Direction: snapshots.Inbound, Method: "POST", URL: "http://svc/items", Start: t0, Status: 200,
			ResponseHeader: http.Header{"Content-Type": {"application/json"}}, ResponseBody: []byte(`{"id":"` + id + `"}`)},
		{ID: 2, Direction: snapshots.Inbound, Method: "GET", URL: "http://svc/items/" + id, Start: t0.Add(10 * time.Millisecond), Status: 200},
	}
}

// TestStateOpenModelCountsWaitsForSources: in the open model a GET due
// 50 ms after the POST whose answer it takes an id from, answered after
// 150 ms, waits for it: the call's stats count it, with the wait.
func TestStateOpenModelCountsWaitsForSources(t *testing.T) {
	srv, notFound := slowCreates(150 * time.Millisecond)
	defer srv.Close()
	r := newReplayer(t, Config{Target: srv.URL, Exchanges: createThenRead(), State: StateConfig{Correlate: true}})
	var s statusSink
	st, err := r.Run(context.Background(), LoadPlan{Rate: Rate{Count: 20, Per: time.Second}, Iterations: 3}, &s)
	if err != nil {
		t.Fatal(err)
	}
	if notFound.Load() != 0 || s.status[200] != 6 {
		t.Errorf("statuses %v, 404 ×%d; want every id read back", s.status, notFound.Load())
	}
	if st.WaitedForSource != 3 || st.MaxWaitForSource < 50*time.Millisecond || st.MaxWaitForSource > 2*time.Second {
		t.Errorf("stats: %d waited, up to %s; want the 3 GETs, each about 100 ms", st.WaitedForSource, st.MaxWaitForSource)
	}
	// The next call counts its own waits only.
	st, err = r.Run(context.Background(), LoadPlan{VUs: 1, Iterations: 2}, &s)
	if err != nil || st.WaitedForSource != 0 {
		t.Errorf("a closed-model call with one user: %d waited, %v; want none", st.WaitedForSource, err)
	}
}
