package replayer

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/authtest"
	"github.com/replaykit/replay/snapshots"
	"github.com/replaykit/replay/tokens"
)

// transactions is a recording of n clients' POST /transactions/random and
// GET of the id the answer held, their Authorization redacted (half with
// the scheme kept, as recording does now, half without, as it did).
func transactions(n int) []*snapshots.Exchange {
	var exs []*snapshots.Exchange
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := range n {
		auth := "Bearer " + Redacted
		if i%2 == 1 {
			auth = Redacted
		}
		id := fmt.Sprintf("0000%04d-1111-4222-8333-444455556666", i)
		exs = append(exs,
			&snapshots.Exchange{ID: int64(2*i + 1), Direction: snapshots.Inbound, Method: "POST", URL: "http://svc/transactions/random",
				Start: t0.Add(time.Duration(2*i) * time.Second), Duration: time.Millisecond,
				RequestHeader: http.Header{"Authorization": {auth}, "Content-Type": {"application/json"}}, RequestBody: []byte(`{}`),
				Status: 201, ResponseHeader: http.Header{"Content-Type": {"application/json"}, "Location": {"/transactions/" + id}},
				ResponseBody: []byte(`{"id":"` + id + `","amount":42}`)},
			&snapshots.Exchange{ID: int64(2*i + 2), Direction: snapshots.Inbound, Method: "GET", URL: "http://svc/transactions/" + id,
				Start: t0.Add(time.Duration(2*i+1) * time.Second), Duration: time.Millisecond,
				RequestHeader: http.Header{"Authorization": {auth}}, Status: 200,
				ResponseHeader: http.Header{"Content-Type": {"application/json"}}, ResponseBody: []byte(`{"id":"` + id + `","amount":42}`)})
	}
	return exs
}

// authService starts an OpenID provider with 2 s tokens and the resource
// service trusting it.
func authService(t *testing.T) (*authtest.Issuer, *authtest.Resource, *httptest.Server) {
	t.Helper()
	iss := authtest.StartIssuer(t, 2*time.Second)
	rs := authtest.NewResource(iss)
	srv := httptest.NewServer(rs)
	t.Cleanup(srv.Close)
	return iss, rs, srv
}

func oauth2Tokens(iss *authtest.Issuer) *tokens.Cache {
	return tokens.NewCache(tokens.OAuth2{TokenURL: iss.TokenURL, ClientID: authtest.ClientID, ClientSecret: authtest.ClientSecret, Scopes: []string{"openid"}}.Fetch)
}

// statusSink counts results by status and keeps their errors.
type statusSink struct {
	mu     sync.Mutex
	status map[int]int
	errs   []string
}

func (s *statusSink) Add(r *snapshots.Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.status == nil {
		s.status = map[int]int{}
	}
	s.status[r.Status]++
	if r.Error != "" {
		s.errs = append(s.errs, r.Error)
	}
}

// checkAuthenticated checks a run against the resource service: no 401,
// no 404, no error, refreshed tokens, and the link listed as resolved. A
// token refused on its way (a loaded machine can delay a request past its
// token's expiry) must have been retried and counted apart.
func checkAuthenticated(t *testing.T, rs *authtest.Resource, s *statusSink, states ...*snapshots.State) {
	t.Helper()
	var st snapshots.State
	for _, s := range states {
		st.Add(s)
	}
	if s.status[401] != 0 || rs.Unauthorized.Load() != st.TokenRetries || rs.NotFound.Load() != 0 || s.status[404] != 0 || len(s.errs) > 0 {
		t.Errorf("statuses %v, errors %v; service answered 401 ×%d (%s; %d retried), 404 ×%d; want none", s.status, s.errs,
			rs.Unauthorized.Load(), rs.Refusal(), st.TokenRetries, rs.NotFound.Load())
	}
	if s.status[201] == 0 || s.status[200] == 0 {
		t.Errorf("statuses %v; want 201s and 200s", s.status)
	}
	if n := rs.Tokens(); n < 2 {
		t.Errorf("the service saw %d distinct tokens; want a refresh (≥ 2) over a run longer than their lifetime", n)
	}
	if st.TokenRetries > 4 {
		t.Errorf("%d requests retried for an expired token; want tokens renewed before they expire", st.TokenRetries)
	}
	found := false
	for _, l := range st.Links {
		if l.From == "$.id of POST /transactions/random" && l.To == "path of GET /transactions/{id}" {
			found = true
			if l.Requests == 0 || l.Resolved != l.Requests {
				t.Errorf("link %+v: want every request resolved", l)
			}
		}
	}
	if !found {
		t.Errorf("links %+v; want $.id of POST /transactions/random → path of GET /transactions/{id}", st.Links)
	}
}

func TestStateOAuth2TokensAndCorrelatedIdsClosedModel(t *testing.T) {
	iss, rs, srv := authService(t)
	r := newReplayer(t, Config{Target: srv.URL, Exchanges: transactions(5),
		State: StateConfig{Tokens: oauth2Tokens(iss), Correlate: true}})
	var s statusSink
	if _, err := r.Run(context.Background(), LoadPlan{VUs: 4, Duration: 5 * time.Second}, &s); err != nil {
		t.Fatal(err)
	}
	checkAuthenticated(t, rs, &s, r.State())
}

func TestStateTokenCommandAndCorrelatedIdsOpenModel(t *testing.T) {
	iss, rs, srv := authService(t)
	t.Setenv("AUTHTEST_SECRET", authtest.ClientSecret)
	cmd := `curl -sf -u "` + authtest.ClientID + `:$AUTHTEST_SECRET" -d grant_type=client_credentials -d scope=openid ` + iss.TokenURL + ` | jq -r .access_token`
	src := tokens.NewCache(tokens.Command{Cmd: cmd}.Fetch)
	r := newReplayer(t, Config{Target: srv.URL, Exchanges: transactions(5),
		State: StateConfig{Tokens: src, Correlate: true}})
	var s statusSink
	if _, err := r.Run(context.Background(), LoadPlan{Rate: Rate{Count: 200, Per: time.Second}, Duration: 5 * time.Second}, &s); err != nil {
		t.Fatal(err)
	}
	checkAuthenticated(t, rs, &s, r.State())
	if f := src.Fetches(); f < 2 || f > 10 {
		t.Errorf("the command ran %d times; want a few (a 2 s token over 5 s), not one per request", f)
	}
}

func TestStateShardsKeepSourcesWithTheirDependents(t *testing.T) {
	iss, rs, srv := authService(t)
	src := oauth2Tokens(iss)
	var s statusSink
	var wg sync.WaitGroup
	var states [2]*snapshots.State
	for k := range 2 {
		r := newReplayer(t, Config{Target: srv.URL, Exchanges: transactions(5), Shard: Shard{K: k, N: 2},
			State: StateConfig{Tokens: src, Correlate: true}})
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := r.Run(context.Background(), LoadPlan{VUs: 4, Duration: 3 * time.Second}, &s); err != nil {
				t.Error(err)
			}
			states[k] = r.State()
		}()
	}
	wg.Wait()
	checkAuthenticated(t, rs, &s, states[:]...)
}

func TestStateRedactedCredentialWithoutTokensIsNamed(t *testing.T) {
	_, rs, srv := authService(t)
	r := newReplayer(t, Config{Target: srv.URL, Exchanges: transactions(2)})
	var s statusSink
	if _, err := r.Run(context.Background(), LoadPlan{Iterations: 1}, &s); err != nil {
		t.Fatal(err)
	}
	st := r.State()
	if st == nil || st.RedactedRefused != 4 || rs.Unauthorized.Load() != 4 {
		t.Errorf("state %+v, service 401 ×%d; want 4 requests refused with a redacted credential", st, rs.Unauthorized.Load())
	}
}

func TestStateLoginCookieIsReplayedLive(t *testing.T) {
	_, rs, srv := authService(t)
	exs := []*snapshots.Exchange{
		{ID: 1, Direction: snapshots.Inbound, Method: "POST", URL: "http://svc/login", Status: 204,
			ResponseHeader: http.Header{"Set-Cookie": {Redacted}}},
		{ID: 2, Direction: snapshots.Inbound, Method: "GET", URL: "http://svc/me", Status: 200,
			RequestHeader: http.Header{"Cookie": {Redacted}}},
		{ID: 3, Direction: snapshots.Inbound, Method: "GET", URL: "http://svc/me", Status: 200,
			RequestHeader: http.Header{"Cookie": {"session=0123456789abcdef; theme=dark"}}},
	}
	r := newReplayer(t, Config{Target: srv.URL, Exchanges: exs, State: StateConfig{Correlate: true}})
	var s statusSink
	if _, err := r.Run(context.Background(), LoadPlan{VUs: 2, Iterations: 5}, &s); err != nil {
		t.Fatal(err)
	}
	if s.status[200] != 10 || rs.Unauthorized.Load() != 0 {
		t.Errorf("statuses %v, service 401 ×%d; want every GET /me answered with the live session", s.status, rs.Unauthorized.Load())
	}
	st := r.State()
	if st == nil || len(st.Links) == 0 || !strings.HasPrefix(st.Links[0].From, "Set-Cookie of POST /login") {
		t.Errorf("state %+v; want the cookie link listed", st)
	}
}

// --shift-times moves timestamps within the recording's span by the
// replay's offset, in the query and the body; others stay.
func TestStateShiftTimes(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var mu sync.Mutex
	var seen []*http.Request
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, 512)
		n, _ := r.Body.Read(b)
		mu.Lock()
		seen, bodies = append(seen, r), append(bodies, string(b[:n]))
		mu.Unlock()
	}))
	defer srv.Close()
	exs := []*snapshots.Exchange{
		{ID: 1, Direction: snapshots.Inbound, Method: "GET", Start: t0, Duration: time.Second, Status: 200,
			URL: fmt.Sprintf("http://svc/events?since=%s&until=%d&born=2001-02-03T04:05:06Z", t0.Add(-500*time.Millisecond).Format(time.RFC3339Nano), t0.Unix())},
		{ID: 2, Direction: snapshots.Inbound, Method: "POST", URL: "http://svc/events", Start: t0.Add(10 * time.Second), Duration: time.Second, Status: 201,
			RequestHeader: http.Header{"X-Sent-At": {"2026-01-02T03:04:10Z"}}, RequestBody: []byte(`{"at":"2026-01-02T03:04:10.250+00:00","n":1}`)},
	}
	r := newReplayer(t, Config{Target: srv.URL, Exchanges: exs, State: StateConfig{ShiftTimes: true}})
	start := time.Now()
	var s statusSink
	if _, err := r.Run(context.Background(), LoadPlan{Iterations: 1}, &s); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 {
		t.Fatalf("target saw %d requests", len(seen))
	}
	q := seen[0].URL.Query()
	since, err := time.Parse(time.RFC3339Nano, q.Get("since"))
	if err != nil || since.Sub(start) > 2*time.Second || start.Sub(since) > 2*time.Second {
		t.Errorf("since=%s (%v); want about now, %s", q.Get("since"), err, start.UTC())
	}
	if q.Get("until") == fmt.Sprint(t0.Unix()) || q.Get("born") != "2001-02-03T04:05:06Z" {
		t.Errorf("until=%s born=%s; want until moved and born (outside the recording) kept", q.Get("until"), q.Get("born"))
	}
	var at struct{ At string }
	if err := json.Unmarshal([]byte(bodies[1]), &at); err != nil || !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00$`).MatchString(at.At) || strings.HasPrefix(at.At, "2026-01-02T03") {
		t.Errorf("body %s: want $.at moved, its layout kept", bodies[1])
	}
	if h := seen[1].Header.Get("X-Sent-At"); h == "2026-01-02T03:04:10Z" || !strings.HasSuffix(h, "Z") {
		t.Errorf("X-Sent-At: %s; want it moved, in UTC still", h)
	}
	if st := r.State(); st == nil || st.Shifted != 4 {
		t.Errorf("state %+v; want 4 timestamps shifted", st)
	}
}

// When the source of a value fails, the dependent request goes out with
// the recorded value, and its 404 is put down to the missing link.
func TestStateUnresolvedLinkExplainsTheNotFound(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "POST" {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	r := newReplayer(t, Config{Target: srv.URL, Exchanges: transactions(3), State: StateConfig{Correlate: true}})
	var s statusSink
	if _, err := r.Run(context.Background(), LoadPlan{Iterations: 1}, &s); err != nil {
		t.Fatal(err)
	}
	st := r.State()
	if st == nil || len(st.Links) != 1 {
		t.Fatalf("state %+v; want one link", st)
	}
	l := st.Links[0]
	if l.Requests != 3 || l.Resolved != 0 || l.NotFound != 3 || l.Why != "its source was answered 500" {
		t.Errorf("link %+v; want 3 unresolved, 3 answered 404, the source's 500 named", l)
	}
}

// A token the target refuses is dropped at once: the request is sent
// again once with a fresh one, and counted apart.
func TestStateRefusedTokenRetriedOnceWithAFreshOne(t *testing.T) {
	var fetched atomicCount
	src := tokens.NewCache(func(ctx context.Context) (string, time.Time, error) {
		return fmt.Sprintf("tok%d", fetched.Add(1)), time.Time{}, nil // no expiry known
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "Bearer tok1" { // revoked
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	exs := transactions(2)[:1]
	r := newReplayer(t, Config{Target: srv.URL, Exchanges: exs, State: StateConfig{Tokens: src}})
	var s statusSink
	if _, err := r.Run(context.Background(), LoadPlan{Iterations: 3}, &s); err != nil {
		t.Fatal(err)
	}
	if s.status[200] != 3 || fetched.Load() != 2 {
		t.Errorf("statuses %v after %d fetches; want 3 × 200, the refused token replaced once", s.status, fetched.Load())
	}
	if st := r.State(); st == nil || st.TokenRetries != 1 {
		t.Errorf("state %+v; want 1 retry counted", st)
	}
}

// The explain phase, outside the request sequence, takes the values of
// the last answer of each source: no 404 there either.
func TestStateExplainPhaseUsesTheLastLiveValues(t *testing.T) {
	iss, rs, srv := authService(t)
	r := newReplayer(t, Config{Target: srv.URL, Exchanges: transactions(3),
		State: StateConfig{Tokens: oauth2Tokens(iss), Correlate: true}})
	var s statusSink
	if _, err := r.Run(context.Background(), LoadPlan{Explain: 3, Iterations: 1}, &s); err != nil {
		t.Fatal(err)
	}
	if rs.NotFound.Load() != 0 || s.status[404] != 0 || s.status[200] < 4 {
		t.Errorf("statuses %v, service 404 ×%d; want the explain phase's GETs found too", s.status, rs.NotFound.Load())
	}
}
