package recorder

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/ca"
	"github.com/replaykit/replay/internal/redact"
)

// recordLogin records, through a Session with redaction cfg, one inbound
// login whose app calls an HTTPS upstream through the outbound proxy (our
// CA), both carrying secrets in the query, the body and the headers. It
// returns the snapshot's bytes on disk.
func recordLogin(t *testing.T, cfg redact.Config) []byte {
	t.Helper()
	upstream := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"access_token":"out-at-5ec","scope":"read-visible","extra_code":"out-extra-5ec"}`)
	}))
	t.Cleanup(upstream.Close)
	authority, err := ca.LoadOrCreate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var appClient *http.Client
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		req, _ := http.NewRequest("POST", upstream.URL+"/oauth?api_key=out-key-5ec&grant=visible-grant",
			strings.NewReader("grant_type=client_credentials&client_secret=out-cs-5ec&user=visible-user"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Api-Key", "out-hdr-5ec")
		res, err := appClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		up, _ := io.ReadAll(res.Body)
		res.Body.Close()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Set-Cookie", "sid=in-cookie-5ec")
		io.WriteString(w, `{"session":"in-sess-5ec","name":"visible-name","upstream":`+string(up)+`}`)
	}))
	t.Cleanup(app.Close)
	roots := x509.NewCertPool()
	roots.AddCert(upstream.Certificate())
	path := filepath.Join(t.TempDir(), "s.snap")
	s, err := NewSession(SessionConfig{
		Snapshot:    path,
		Inbound:     []SessionInbound{{Listen: "127.0.0.1:0", Target: mustURL(t, app.URL)}},
		Outbound:    &SessionOutbound{Listen: "127.0.0.1:0", CA: authority},
		UpstreamTLS: &tls.Config{RootCAs: roots},
		Redact:      cfg,
	})
	if err != nil {
		t.Fatal(err)
	}
	appClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		Proxy:           http.ProxyURL(&url.URL{Scheme: "http", Host: s.OutboundAddr().String()}),
		TLSClientConfig: &tls.Config{RootCAs: authority.Pool()},
	}}
	s.Start()
	req, _ := http.NewRequest("POST", "http://"+s.InboundAddrs()[0].String()+"/login?token=in-tok-5ec&page=visible-page&api_key=in-key-5ec",
		strings.NewReader(`{"user":"visible-user","password":"in-pw-5ec","remember":true}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer in-auth-5ec")
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !bytes.Contains(body, []byte("in-sess-5ec")) || !bytes.Contains(body, []byte("out-at-5ec")) {
		t.Fatalf("client got %d %s; want the app's answer, secrets included", res.StatusCode, body)
	}
	if err := s.Stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if wal, err := os.ReadFile(path + "-wal"); err == nil {
		raw = append(raw, wal...)
	}
	return raw
}

// TestSessionRedactsSecrets: secrets in query strings, JSON and form
// bodies and headers, inbound and outbound (HTTPS through our CA), appear
// nowhere in the snapshot's bytes; what is not secret is kept. The app and
// the upstream got the secrets.
func TestSessionRedactsSecrets(t *testing.T) {
	raw := recordLogin(t, redact.Config{Fields: []string{"extra_code"}})
	for _, secret := range []string{"in-tok-5ec", "in-key-5ec", "in-pw-5ec", "in-auth-5ec", "in-sess-5ec", "in-cookie-5ec",
		"out-key-5ec", "out-cs-5ec", "out-hdr-5ec", "out-at-5ec", "out-extra-5ec"} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("the snapshot file holds the secret %q", secret)
		}
	}
	for _, kept := range []string{"visible-page", "visible-user", "visible-name", "visible-grant", "read-visible", Redacted, `"remember":true`} {
		if !bytes.Contains(raw, []byte(kept)) {
			t.Errorf("the snapshot file lost %q", kept)
		}
	}
}

// TestSessionNoRedact: with redaction off the snapshot keeps the secrets.
func TestSessionNoRedact(t *testing.T) {
	raw := recordLogin(t, redact.Config{Off: true})
	for _, secret := range []string{"in-tok-5ec", "in-pw-5ec", "in-auth-5ec", "out-cs-5ec", "out-at-5ec"} {
		if !bytes.Contains(raw, []byte(secret)) {
			t.Errorf("--no-redact: the snapshot file lacks %q", secret)
		}
	}
}
