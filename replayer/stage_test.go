package replayer

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
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
// no 404, no error, refreshed tokens, and the link listed as resolved.
func checkAuthenticated(t *testing.T, rs *authtest.Resource, s *statusSink, states ...*snapshots.State) {
	t.Helper()
	if rs.Unauthorized.Load() != 0 || s.status[401] != 0 || rs.NotFound.Load() != 0 || s.status[404] != 0 || len(s.errs) > 0 {
		t.Errorf("statuses %v, errors %v; service answered 401 ×%d, 404 ×%d; want none", s.status, s.errs, rs.Unauthorized.Load(), rs.NotFound.Load())
	}
	if s.status[201] == 0 || s.status[200] == 0 {
		t.Errorf("statuses %v; want 201s and 200s", s.status)
	}
	if n := rs.Tokens(); n < 2 {
		t.Errorf("the service saw %d distinct tokens; want a refresh (≥ 2) over a run longer than their lifetime", n)
	}
	var st snapshots.State
	for _, s := range states {
		st.Add(s)
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
