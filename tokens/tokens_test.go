package tokens

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func jwtWithExp(exp time.Time) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256"}`)) + "." + enc([]byte(fmt.Sprintf(`{"sub":"x","exp":%d}`, exp.Unix()))) + ".c2ln"
}

func TestJWTExpiry(t *testing.T) {
	exp := time.Unix(2000000000, 0)
	for _, c := range []struct {
		tok string
		ok  bool
	}{
		{jwtWithExp(exp), true},
		{"opaque-token", false},
		{"a.b.c", false},
		{base64.RawURLEncoding.EncodeToString([]byte(`{}`)) + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"x"}`)) + ".s", false},
	} {
		got, ok := JWTExpiry(c.tok)
		if ok != c.ok || (ok && !got.Equal(exp)) {
			t.Errorf("JWTExpiry(%q) = %v, %v; want ok %v", c.tok, got, ok, c.ok)
		}
	}
}

// A token is renewed before it expires, once however many ask, and
// callers never get an expired one.
func TestCacheRenewsBeforeExpiryOnce(t *testing.T) {
	var fetches atomic.Int64
	c := NewCache(func(ctx context.Context) (string, time.Time, error) {
		n := fetches.Add(1)
		time.Sleep(20 * time.Millisecond)
		return fmt.Sprintf("tok%d", n), time.Now().Add(400 * time.Millisecond), nil
	})
	var wg sync.WaitGroup
	deadline := time.Now().Add(time.Second)
	var mu sync.Mutex
	seen := map[string]time.Time{}
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				tok, err := c.Token(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if _, ok := seen[tok]; !ok {
					seen[tok] = time.Now()
				}
				mu.Unlock()
				time.Sleep(time.Millisecond)
			}
		}()
	}
	wg.Wait()
	if n := fetches.Load(); n < 3 || n > 5 {
		t.Errorf("%d fetches over 1 s of 400 ms tokens from 8 callers; want 3 to 5", n)
	}
	if len(seen) != int(fetches.Load()) {
		t.Errorf("callers saw %d tokens of %d fetched", len(seen), fetches.Load())
	}
}

func TestCacheInvalidateFetchesAnother(t *testing.T) {
	var n atomic.Int64
	c := NewCache(func(ctx context.Context) (string, time.Time, error) {
		return fmt.Sprintf("tok%d", n.Add(1)), time.Time{}, nil
	})
	a, _ := c.Token(context.Background())
	b, _ := c.Token(context.Background())
	c.Invalidate(a)
	d, _ := c.Token(context.Background())
	if a != "tok1" || b != "tok1" || d != "tok2" {
		t.Errorf("tokens %s %s %s; want tok1 tok1, then tok2 after Invalidate", a, b, d)
	}
}

func TestCommandTokens(t *testing.T) {
	tok, exp, err := Command{Cmd: "echo '  opaque  '", TTL: time.Minute}.Fetch(context.Background())
	if err != nil || tok != "opaque" || time.Until(exp) < 50*time.Second {
		t.Errorf("opaque token %q, expiry %v, %v; want it trimmed, living --token-ttl", tok, exp, err)
	}
	jwt := jwtWithExp(time.Now().Add(time.Hour))
	if tok, exp, err = (Command{Cmd: "echo " + jwt, TTL: time.Minute}).Fetch(context.Background()); err != nil || tok != jwt || time.Until(exp) < 59*time.Minute {
		t.Errorf("JWT expiry %v, %v; want the exp claim over --token-ttl", exp, err)
	}
	_, _, err = Command{Cmd: "echo secret-output; echo 'no such client' >&2; exit 3"}.Fetch(context.Background())
	if err == nil || !strings.Contains(err.Error(), "exit status 3: no such client") || strings.Contains(err.Error(), "secret-output") {
		t.Errorf("error %v; want the exit status and the last line of stderr, never the output", err)
	}
	if _, _, err = (Command{Cmd: "true"}).Fetch(context.Background()); err == nil || !strings.Contains(err.Error(), "printed no token") {
		t.Errorf("error %v; want 'printed no token'", err)
	}
}
