package mock

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/pgtest"
	"github.com/replaykit/replay/snapshots"
)

// clientEnv switches the test binary into a client: it GETs the URL in this
// variable with a stock transport (proxy from the environment, system roots
// from SSL_CERT_FILE) and prints what it got as JSON.
const clientEnv = "REPLAY_MOCK_TEST_CLIENT_URL"

func TestMain(m *testing.M) {
	if u := os.Getenv(clientEnv); u != "" {
		os.Exit(runClient(u))
	}
	os.Exit(pgtest.Main(m)) // a database only for TestDemoCatalog
}

type clientResult struct {
	Status int         `json:"status"`
	Header http.Header `json:"header"`
	Body   []byte      `json:"body"`
}

func runClient(u string) int {
	c := &http.Client{
		Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, DisableCompression: true},
		Timeout:   60 * time.Second,
	}
	resp, err := c.Get(u)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := json.NewEncoder(os.Stdout).Encode(clientResult{resp.StatusCode, resp.Header, b}); err != nil {
		return 1
	}
	return 0
}

// snapshotOf writes exs to a snapshot file and reads the outbound ones back
// with Load.
func snapshotOf(t *testing.T, exs []*snapshots.Exchange) []*snapshots.Exchange {
	t.Helper()
	path := filepath.Join(t.TempDir(), "snap.db")
	w, err := snapshots.Create(path, snapshots.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range exs {
		c := *e
		c.ID = 0
		w.AddExchange(&c)
	}
	// An inbound exchange that Load must leave out.
	w.AddExchange(&snapshots.Exchange{Direction: snapshots.Inbound, Protocol: "http", Service: "app:8080",
		Start: base, Method: "GET", URL: "http://app:8080/a", Status: 200})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	snap, err := snapshots.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	got, err := Load(context.Background(), snap)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(exs) {
		t.Fatalf("Load: %d exchanges, want %d outbound", len(got), len(exs))
	}
	return got
}

// A separate Go process that reaches the mock through HTTPS_PROXY and trusts
// replay's CA only through SSL_CERT_FILE (read at process start) gets the
// recorded answers, from a snapshot file.
func TestGoClientProcess(t *testing.T) {
	c := testCA(t)
	bundle, err := c.BundlePath()
	if err != nil {
		t.Fatal(err)
	}
	fixture, _ := answersFixture(t)
	exs := snapshotOf(t, fixture)
	s := newServer(t, Config{Exchanges: exs, CA: c})
	proxy := startMock(t, s)
	// The client sends no Accept-Encoding: the gzip recording comes decoded.
	plain := []byte(strings.Repeat("compressible ", 1000)) // https://api.test/gzip
	for _, tt := range []struct {
		url    string
		status int
		body   []byte
	}{
		{"https://api.test/json", 201, []byte(`{"ok":true}`)},
		{"https://api.test/gzip", 200, plain},
		{"http://plain.test:8080/json", 201, []byte(`{"ok":true}`)},
		{"https://api.test/missing", 502, nil},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), clientEnv+"="+tt.url, "HTTPS_PROXY="+proxy, "HTTP_PROXY="+proxy,
			"SSL_CERT_FILE="+bundle, "SSL_CERT_DIR=", "NO_PROXY=", "no_proxy=")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("client %s: %v: %s", tt.url, err, stderr.String())
		}
		var got clientResult
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("client %s: %q: %v", tt.url, out, err)
		}
		if got.Status != tt.status || (tt.body != nil && !bytes.Equal(got.Body, tt.body)) {
			t.Errorf("client %s: %d, %d bytes; want %d, %d bytes", tt.url, got.Status, len(got.Body), tt.status, len(tt.body))
		}
		if ce := got.Header.Get("Content-Encoding"); ce != "" {
			t.Errorf("client %s: Content-Encoding %q, asked for none", tt.url, ce)
		}
		if tt.status == 502 && got.Header.Get(MarkerHeader) != "miss" {
			t.Errorf("client %s: no miss marker in %v", tt.url, got.Header)
		}
	}
}

func TestCurl(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl not on PATH")
	}
	c := testCA(t)
	fixture, _ := answersFixture(t)
	s := newServer(t, Config{Exchanges: fixture, CA: c})
	proxy := startMock(t, s)
	dir := t.TempDir()
	run := func(url string) (status, header string, body []byte) {
		t.Helper()
		hdr, out := filepath.Join(dir, "h"), filepath.Join(dir, "b")
		cmd := exec.Command(curl, "-sS", "--max-time", "60", "--proxy", proxy, "--cacert", c.CertPath(),
			"-H", "Accept-Encoding: gzip", "-D", hdr, "-o", out, "-w", "%{http_code}", url)
		cmd.Env = append(os.Environ(), "NO_PROXY=", "no_proxy=", "CURL_CA_BUNDLE=")
		st, err := cmd.Output()
		if err != nil {
			t.Fatalf("curl %s: %v %s", url, err, st)
		}
		h, _ := os.ReadFile(hdr)
		b, _ := os.ReadFile(out)
		return string(st), string(h), b
	}
	gz := fixture[8].ResponseBody
	if st, h, b := run("https://api.test/gzip"); st != "200" || !bytes.Equal(b, gz) || !strings.Contains(strings.ToLower(h), "content-encoding: gzip") {
		t.Errorf("gzip: %s, %d bytes (want %d identical), headers %q", st, len(b), len(gz), h)
	}
	large := fixture[10].ResponseBody
	if st, _, b := run("https://api.test/large"); st != "200" || !bytes.Equal(b, large) {
		t.Errorf("large: %s, %d bytes (want %d identical)", st, len(b), len(large))
	}
	if st, h, b := run("https://api.test/json?x=1"); st != "502" || !strings.Contains(strings.ToLower(h), "x-replay-mock: miss") ||
		!strings.Contains(string(b), `"closest":"GET https://api.test/json"`) {
		t.Errorf("miss: %s %q %s", st, h, b)
	}
}
