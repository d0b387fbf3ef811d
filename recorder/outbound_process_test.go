package recorder

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Environment of the client process that TestOutboundGoClientProcess
// starts by re-running this test binary.
const (
	clientProcessEnv = "REPLAY_TEST_OUTBOUND_CLIENT"
	clientURLsEnv    = "REPLAY_TEST_OUTBOUND_URLS"
)

// clientResult is what the client process reports per URL.
type clientResult struct {
	URL    string `json:"url"`
	Status int    `json:"status"`
	Body   string `json:"body"`
	Error  string `json:"error"`
}

// TestOutboundClientProcess is not a test: it is the app of
// TestOutboundGoClientProcess, run in its own process so that Go reads
// SSL_CERT_FILE and HTTPS_PROXY at start-up as any Go app would. It fetches
// each URL with a client that has no configuration of its own.
func TestOutboundClientProcess(t *testing.T) {
	if os.Getenv(clientProcessEnv) != "1" {
		return
	}
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment}}
	enc := json.NewEncoder(os.Stdout)
	for _, u := range strings.Fields(os.Getenv(clientURLsEnv)) {
		r := clientResult{URL: u}
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		req.Header.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
		res, err := c.Do(req)
		if err != nil {
			r.Error = err.Error()
		} else {
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			r.Status, r.Body = res.StatusCode, string(b)
		}
		enc.Encode(r)
	}
}

// runClientProcess runs the client process with env added to a clean
// environment and returns its results.
func runClientProcess(t *testing.T, urls []string, env ...string) []clientResult {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestOutboundClientProcess$", "-test.count=1")
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(k) {
		case "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "SSL_CERT_FILE", "SSL_CERT_DIR", "GODEBUG":
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	cmd.Env = append(cmd.Env, clientProcessEnv+"=1", clientURLsEnv+"="+strings.Join(urls, " "))
	cmd.Env = append(cmd.Env, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("client process: %v\n%s\n%s", err, out, stderr.String())
	}
	var results []clientResult
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if line := sc.Bytes(); bytes.HasPrefix(line, []byte("{")) {
			var r clientResult
			if err := json.Unmarshal(line, &r); err != nil {
				t.Fatalf("client process output %q: %v", line, err)
			}
			results = append(results, r)
		}
	}
	if len(results) != len(urls) {
		t.Fatalf("client process reported %d results for %d URLs:\n%s", len(results), len(urls), out)
	}
	return results
}

// TestOutboundGoClientProcess: an unconfigured Go app goes through the
// recorder with HTTPS_PROXY / HTTP_PROXY and trusts replay's CA through
// SSL_CERT_FILE pointing at the bundle; without it the interception is
// refused.
func TestOutboundGoClientProcess(t *testing.T) {
	e := newOBEnv(t)
	e.https("api.test:443", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "secure "+r.URL.RequestURI())
	}))
	e.http("plain.test:8080", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "plain "+r.URL.RequestURI())
	}))
	inflight := NewInflight()
	inflight.Begin(77, "4bf92f3577b34da6a3ce929d0e0e4736")
	inflight.Begin(78, "")
	e.cfg.Inflight = inflight
	e.start()
	bundle, err := e.proxyCA.BundlePath()
	if err != nil {
		t.Fatal(err)
	}
	proxy := "http://" + e.proxyURL.Host
	urls := []string{"https://api.test/products?x=1", "http://plain.test:8080/status"}

	results := runClientProcess(t, urls, "HTTPS_PROXY="+proxy, "HTTP_PROXY="+proxy, "SSL_CERT_FILE="+bundle)
	want := []clientResult{
		{URL: urls[0], Status: 200, Body: "secure /products?x=1"},
		{URL: urls[1], Status: 200, Body: "plain /status"},
	}
	for i := range want {
		if results[i] != want[i] {
			t.Errorf("client got %+v, want %+v", results[i], want[i])
		}
	}
	exs := e.sink.wait(t, 2)
	byURL := map[string]bool{}
	for _, ex := range exs {
		byURL[ex.URL] = true
		if ex.ParentID != 77 || ex.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" {
			t.Errorf("%s: ParentID %d TraceID %q, want 77 by traceparent", ex.URL, ex.ParentID, ex.TraceID)
		}
	}
	if !byURL[urls[0]] || !byURL[urls[1]] {
		t.Errorf("recorded %v, want both URLs", byURL)
	}

	// Control: the same app without the bundle refuses the intercepted TLS.
	results = runClientProcess(t, urls[:1], "HTTPS_PROXY="+proxy)
	if results[0].Error == "" || !strings.Contains(results[0].Error, "certificate") {
		t.Errorf("without SSL_CERT_FILE the app got %+v, want a certificate error", results[0])
	}
}

// TestOutboundCurl: curl through the recorder, trusting ca.pem: a small
// JSON POST, and a 3 MB upload that curl sends with Expect: 100-continue.
func TestOutboundCurl(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed")
	}
	e := newOBEnv(t)
	e.https("api.test:443", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/upload" {
			fmt.Fprintf(w, "%d %x %s", len(body), sha256.Sum256(body), r.Header.Get("Expect"))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"echo":` + string(body) + `}`))
	}))
	e.start()
	dir := t.TempDir()
	upload := patternPrefix(3 << 20)
	if err := os.WriteFile(filepath.Join(dir, "upload"), upload, 0o644); err != nil {
		t.Fatal(err)
	}
	curlDo := func(args ...string) string {
		t.Helper()
		args = append([]string{"-sS", "--fail-with-body",
			"--proxy", "http://" + e.proxyURL.Host, "--noproxy", "",
			"--cacert", e.proxyCA.CertPath()}, args...)
		cmd := exec.Command(curl, args...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("curl %v: %v\n%s", args, err, out)
		}
		return string(out)
	}

	out := curlDo("-H", "Content-Type: application/json", "--data-binary", `{"sku":"A-1"}`, "https://api.test/orders?id=5")
	if out != `{"echo":{"sku":"A-1"}}` {
		t.Errorf("curl printed %q", out)
	}
	ex := e.sink.wait(t, 1)[0]
	if ex.Method != http.MethodPost || ex.URL != "https://api.test/orders?id=5" || ex.Service != "api.test:443" ||
		string(ex.RequestBody) != `{"sku":"A-1"}` || ex.Status != 200 || string(ex.ResponseBody) != out {
		t.Errorf("recorded %s %s (%s) %q → %d %q", ex.Method, ex.URL, ex.Service, ex.RequestBody, ex.Status, ex.ResponseBody)
	}
	if ua := ex.RequestHeader.Get("User-Agent"); !strings.HasPrefix(ua, "curl/") {
		t.Errorf("recorded User-Agent %q", ua)
	}

	out = curlDo("-H", "Expect: 100-continue", "--data-binary", "@"+filepath.Join(dir, "upload"), "https://api.test/upload")
	if want := fmt.Sprintf("%d %x 100-continue", len(upload), sha256.Sum256(upload)); out != want {
		t.Errorf("upstream received %q, want %q", out, want)
	}
	ex = e.sink.wait(t, 1)[1]
	if ex.RequestBodySize != int64(len(upload)) || !bytes.Equal(ex.RequestBody, upload[:DefaultBodyLimit]) || ex.Error != "" {
		t.Errorf("recorded upload: %d of %d bytes, error %q", len(ex.RequestBody), ex.RequestBodySize, ex.Error)
	}
}
