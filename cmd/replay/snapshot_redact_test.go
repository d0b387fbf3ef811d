package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// harWithSecrets is a browser HAR entry carrying secrets in headers,
// cookies, the query string and the JSON bodies (the response's decoded,
// as browsers write it, under Content-Encoding: gzip).
const harWithSecrets = `{"log":{"version":"1.2","creator":{"name":"WebInspector","version":"537.36"},"entries":[{
"startedDateTime":"2024-05-14T09:21:38.002Z","time":48.2,
"request":{"method":"POST","url":"https://shop.example.com/api/login?token=har-tok-5ec&lang=visible-lang&ssn=har-ssn-5ec","httpVersion":"http/1.1",
 "headers":[{"name":"authorization","value":"Bearer har-auth-5ec"},{"name":"cookie","value":"sid=har-cookie-5ec"},{"name":"content-type","value":"application/json"}],
 "queryString":[{"name":"token","value":"har-tok-5ec"},{"name":"lang","value":"visible-lang"},{"name":"ssn","value":"har-ssn-5ec"}],
 "cookies":[],"headersSize":-1,"bodySize":60,
 "postData":{"mimeType":"application/json","text":"{\"user\":\"visible-user\",\"password\":\"har-pw-5ec\",\"pin\":\"har-pin-5ec\"}"}},
"response":{"status":200,"statusText":"OK","httpVersion":"http/1.1",
 "headers":[{"name":"set-cookie","value":"sid=har-setcookie-5ec; HttpOnly"},{"name":"content-type","value":"application/json"},{"name":"content-encoding","value":"gzip"}],
 "cookies":[],"content":{"size":60,"mimeType":"application/json","text":"{\"access_token\":\"har-at-5ec\",\"name\":\"visible-name\"}"},
 "redirectURL":"","headersSize":-1,"bodySize":40},
"timings":{"send":0,"wait":45,"receive":1}}]}}`

// jsonlWithSecrets is one exchange of a JSON Lines export with secrets.
const jsonlWithSecrets = `{"format":"replay-jsonl","version":1}
{"type":"exchange","id":1,"direction":"outbound","protocol":"https","service":"api.test:443","start":"2025-03-01T12:00:00Z","duration_ns":1000,"method":"POST","url":"https://api.test/oauth?api_key=jl-key-5ec&page=visible-page","proto":"HTTP/1.1","request_header":{"Authorization":["Basic jl-auth-5ec"],"Content-Type":["application/x-www-form-urlencoded"]},"request_body":"client_secret=jl-cs-5ec&grant_type=visible-grant&pin=jl-pin-5ec","request_body_size":63,"status":200,"response_header":{"Set-Cookie":["s=jl-cookie-5ec"],"Content-Type":["application/json"]},"response_body":"{\"refresh_token\":\"jl-rt-5ec\",\"id\":\"visible-id\"}","response_body_size":47}
`

// importWith imports content (format) with the extra args and returns the
// snapshot file's bytes, stdout and stderr.
func importWith(t *testing.T, content, format string, args ...string) (raw, stdout, stderr string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "s.snap")
	code, stdout, stderr := cliRun(t, content, append([]string{"snapshot", "import", "-", "--format", format, "--out", out}, args...)...)
	if code != 0 {
		t.Fatalf("import: exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), stdout, stderr
}

// TestSnapshotImportRedacts: HAR and JSON Lines imports keep no secret
// (headers, cookies, query parameters, JSON and form fields, and the names
// --redact-query and --redact-field add); --no-redact keeps them and warns.
func TestSnapshotImportRedacts(t *testing.T) {
	for _, tt := range []struct {
		format, content string
		secrets, kept   []string
	}{
		{"har", harWithSecrets,
			[]string{"har-tok-5ec", "har-auth-5ec", "har-cookie-5ec", "har-pw-5ec", "har-setcookie-5ec", "har-at-5ec", "har-ssn-5ec", "har-pin-5ec"},
			[]string{"visible-lang", "visible-user", "visible-name", "Bearer [REDACTED]"}}, // the auth scheme kept
		{"jsonl", jsonlWithSecrets,
			[]string{"jl-key-5ec", "jl-auth-5ec", "jl-cs-5ec", "jl-cookie-5ec", "jl-rt-5ec", "jl-pin-5ec"},
			[]string{"visible-page", "visible-grant", "visible-id", "Basic [REDACTED]"}},
	} {
		t.Run(tt.format, func(t *testing.T) {
			raw, _, stderr := importWith(t, tt.content, tt.format, "--redact-query", "ssn", "--redact-field", "pin")
			for _, s := range tt.secrets {
				if strings.Contains(raw, s) {
					t.Errorf("the snapshot holds the secret %q", s)
				}
			}
			for _, s := range append(tt.kept, "[REDACTED]") {
				if !strings.Contains(raw, s) {
					t.Errorf("the snapshot lost %q", s)
				}
			}
			if stderr != "" {
				t.Errorf("stderr %q; want nothing", stderr)
			}
			raw, _, stderr = importWith(t, tt.content, tt.format, "--no-redact")
			for _, s := range tt.secrets {
				if !strings.Contains(raw, s) {
					t.Errorf("--no-redact: the snapshot lacks %q", s)
				}
			}
			if !strings.HasPrefix(stderr, "warning: --no-redact") || strings.Count(stderr, "\n") != 1 {
				t.Errorf("--no-redact: stderr %q; want one warning line", stderr)
			}
		})
	}
}

func TestSnapshotImportRedactUsage(t *testing.T) {
	for _, args := range [][]string{{"--redact-field", "a b"}, {"--no-redact", "--redact-query", "x"}} {
		code, _, stderr := cliRun(t, jsonlWithSecrets, append([]string{"snapshot", "import", "-", "--format", "jsonl", "--out", filepath.Join(t.TempDir(), "s.snap")}, args...)...)
		if code != 2 || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, %q; want 2 and one line", args, code, stderr)
		}
	}
}
