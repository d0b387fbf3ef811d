package authtest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Resource is a service that wants a valid token on every request but the
// login's: an RS256 JWT signed by a key of the issuer's JWKS, not expired.
//
//	POST /transactions/random  201 {"id": "<uuid>"}, Location /transactions/<uuid>
//	GET  /transactions/{id}    200 the transaction, 404 when no such id
//	POST /login                204, Set-Cookie session=<random> (no token needed)
//	GET  /me                   200 with the session cookie of a login, else 401
type Resource struct {
	issuer, jwksURL string
	// Delay is added to every authenticated request's answer.
	Delay time.Duration

	mu       sync.Mutex
	keys     *jose.JSONWebKeySet
	ids      map[string]bool
	sessions map[string]bool

	// Unauthorized counts the 401s answered; NotFound the 404s; Created
	// the ids created.
	Unauthorized, NotFound, Created atomic.Int64
	// Authorizations are the distinct Authorization values seen.
	auths   sync.Map
	refusal atomic.Value // why the last token was refused
}

// Refusal says why the last token refused was; "" when none was.
func (rs *Resource) Refusal() string {
	s, _ := rs.refusal.Load().(string)
	return s
}

// NewResource returns a resource service trusting iss.
func NewResource(iss *Issuer) *Resource {
	return &Resource{issuer: iss.URL, jwksURL: iss.JWKSURL, ids: map[string]bool{}, sessions: map[string]bool{}}
}

// Tokens returns how many distinct tokens the service was given.
func (rs *Resource) Tokens() int { return len(rs.Seen()) }

// Seen returns the distinct tokens the service was given.
func (rs *Resource) Seen() []string {
	var out []string
	rs.auths.Range(func(k, _ any) bool { out = append(out, k.(string)); return true })
	return out
}

func (rs *Resource) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && r.URL.Path == "/login" {
		sid := newID()
		rs.mu.Lock()
		rs.sessions[sid] = true
		rs.mu.Unlock()
		http.SetCookie(w, &http.Cookie{Name: "session", Value: sid, Path: "/", HttpOnly: true})
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if r.URL.Path == "/me" {
		c, err := r.Cookie("session")
		rs.mu.Lock()
		ok := err == nil && rs.sessions[c.Value]
		rs.mu.Unlock()
		if !ok {
			rs.Unauthorized.Add(1)
			http.Error(w, "no session", http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, `{"session":%q}`, c.Value)
		return
	}
	if err := rs.authorize(r); err != nil {
		rs.Unauthorized.Add(1)
		rs.refusal.Store(err.Error())
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	if rs.Delay > 0 {
		time.Sleep(rs.Delay)
	}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/transactions/random":
		id := newUUID()
		rs.mu.Lock()
		rs.ids[id] = true
		rs.mu.Unlock()
		rs.Created.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Location", "/transactions/"+id)
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]any{"id": id, "amount": 42})
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/transactions/"):
		id := strings.TrimPrefix(r.URL.Path, "/transactions/")
		rs.mu.Lock()
		ok := rs.ids[id]
		rs.mu.Unlock()
		if !ok {
			rs.NotFound.Add(1)
			http.Error(w, "no transaction "+id, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": id, "amount": 42})
	default:
		http.NotFound(w, r)
	}
}

// authorize checks the request's bearer token: signature by the issuer's
// keys (fetched again for an unknown key id), issuer and expiry.
func (rs *Resource) authorize(r *http.Request) error {
	raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return errors.New("no bearer token")
	}
	rs.auths.Store(raw, true)
	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		return fmt.Errorf("not a JWT: %w", err)
	}
	var kid string
	if len(tok.Headers) > 0 {
		kid = tok.Headers[0].KeyID
	}
	key, err := rs.key(kid)
	if err != nil {
		return err
	}
	var claims jwt.Claims
	if err := tok.Claims(key, &claims); err != nil {
		return fmt.Errorf("bad signature: %w", err)
	}
	return claims.ValidateWithLeeway(jwt.Expected{Issuer: rs.issuer, Time: time.Now()}, 0)
}

func (rs *Resource) key(kid string) (any, error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for attempt := 0; attempt < 2; attempt++ {
		if rs.keys != nil {
			if ks := rs.keys.Key(kid); len(ks) > 0 {
				return ks[0].Key, nil
			}
		}
		resp, err := http.Get(rs.jwksURL)
		if err != nil {
			return nil, err
		}
		var set jose.JSONWebKeySet
		err = json.NewDecoder(resp.Body).Decode(&set)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		rs.keys = &set
	}
	return nil, fmt.Errorf("unknown key %q", kid)
}

func newID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func newUUID() string {
	b := make([]byte, 16)
	rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
