package redact

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replaykit/replay/snapshots"
)

func TestSecretField(t *testing.T) {
	for name, want := range map[string]bool{
		"token": true, "access_token": true, "api_key": true, "apikey": true, "X-Api-Key": true, "password": true,
		"passwd": true, "secret": true, "client_secret": true, "session": true, "sessionId": true, "X-Auth-Token": true,
		"Authorization": true, "Proxy-Authorization": true, "Cookie": true, "Set-Cookie": true, "pwd": true, "Pass": true,
		"refreshToken": true, "AWS_SECRET_ACCESS_KEY": true, "private_key": true, "X-Hub-Signature": true,
		"author": false, "max_tokens": false, "sort_key": false, "monkey": false, "key": false, "cwd": false,
		"bypass": false, "nextPageToken": false, "page_token": false, "Accept": false, "Content-Type": false,
		"Sec-WebSocket-Key": false, "Www-Authenticate": false, "token_type": false, "tokens": false,
	} {
		if got := SecretField(name); got != want {
			t.Errorf("SecretField(%q) = %v; want %v", name, got, want)
		}
	}
}

func TestRedactExchange(t *testing.T) {
	reqHeader := http.Header{
		"Authorization": {"Bearer abc"}, "X-Api-Key": {"k1"}, "X-Custom": {"c1"}, "Accept": {"*/*"},
		"Content-Type": {"application/json"}, "Referer": {"https://u:refpw@example.com/x"},
	}
	resHeader := http.Header{"Set-Cookie": {"s=1", "t=2"}, "Content-Type": {"application/x-www-form-urlencoded"}}
	reqBody := []byte(`{"user":"ann","password":"hunter2","pin":1234,"nested":{"api_key":42,"author":"bob"},"list":[{"token":"t1"}],"db":"postgres://u:dbpw@h/x"}`)
	resBody := []byte(`a=1&client_secret=cs1&access_token=at1&b=two&empty_token=`)
	e := &snapshots.Exchange{
		URL:           "http://u:urlpw@api.test/v1/x?token=qt1&page=2&api_key=qk1&custom=c2#frag",
		RequestHeader: reqHeader, RequestBody: reqBody, RequestBodySize: int64(len(reqBody)),
		ResponseHeader: resHeader, ResponseBody: resBody, ResponseBodySize: int64(len(resBody)),
		Error: `Get "http://u:errpw@api.test/": EOF`,
	}
	orig := reqHeader.Clone()
	origBody := bytes.Clone(reqBody)
	New(Config{Headers: []string{"x-custom"}, Query: []string{"custom"}}).Redact(e)

	want := &snapshots.Exchange{
		URL: "http://u:%5BREDACTED%5D@api.test/v1/x?token=%5BREDACTED%5D&page=2&api_key=%5BREDACTED%5D&custom=%5BREDACTED%5D#frag",
		RequestHeader: http.Header{
			"Authorization": {"Bearer " + Mask}, "X-Api-Key": {Mask}, "X-Custom": {Mask}, "Accept": {"*/*"},
			"Content-Type": {"application/json"}, "Referer": {"https://u:%5BREDACTED%5D@example.com/x"},
		},
		RequestBody:    []byte(`{"user":"ann","password":"[REDACTED]","pin":1234,"nested":{"api_key":"[REDACTED]","author":"bob"},"list":[{"token":"[REDACTED]"}],"db":"postgres://u:[REDACTED]@h/x"}`),
		ResponseHeader: http.Header{"Set-Cookie": {Mask, Mask}, "Content-Type": {"application/x-www-form-urlencoded"}},
		ResponseBody:   []byte(`a=1&client_secret=%5BREDACTED%5D&access_token=%5BREDACTED%5D&b=two&empty_token=`),
		Error:          `Get "http://u:%5BREDACTED%5D@api.test/": EOF`,
	}
	want.RequestBodySize, want.ResponseBodySize = int64(len(want.RequestBody)), int64(len(want.ResponseBody))
	if d := cmp.Diff(want, e); d != "" {
		t.Errorf("redacted exchange (-want +got):\n%s", d)
	}
	if d := cmp.Diff(orig, reqHeader); d != "" || !bytes.Equal(origBody, reqBody) {
		t.Errorf("the live header map or body was changed: %s", d)
	}
}

func TestRedactTruncatedJSON(t *testing.T) {
	r := New(Config{Fields: []string{"ssn"}})
	for in, want := range map[string]string{
		`{"password":"hun`:                  `{"password":"[REDACTED]"`,
		`{"a":{"password":`:                 `{"a":{"password":`,
		`{"ssn": 123-45`:                    `{"ssn": "[REDACTED]"`,
		`[{"token":"x\"y","next":"ok"}]`:    `[{"token":"[REDACTED]","next":"ok"}]`,
		`{"secret":null,"token":true}`:      `{"secret":null,"token":true}`,
		`{"k":"password","v":"not secret"}`: `{"k":"password","v":"not secret"}`,
		`{"token":"[REDACTED]"}`:            `{"token":"[REDACTED]"}`,
	} {
		got, _ := r.json([]byte(in))
		if string(got) != want {
			t.Errorf("json(%s) = %s; want %s", in, got, want)
		}
	}
}

func TestRedactGzip(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(`{"access_token":"gz-secret","expires_in":3600}`))
	zw.Close()
	e := &snapshots.Exchange{
		ResponseHeader: http.Header{"Content-Type": {"application/json"}, "Content-Encoding": {"gzip"}},
		ResponseBody:   buf.Bytes(), ResponseBodySize: int64(buf.Len()),
	}
	New(Config{}).Redact(e)
	zr, err := gzip.NewReader(bytes.NewReader(e.ResponseBody))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(zr)
	if want := `{"access_token":"[REDACTED]","expires_in":3600}`; string(got) != want || e.ResponseBodySize != int64(len(e.ResponseBody)) {
		t.Errorf("gunzipped %s (size %d of %d); want %s", got, e.ResponseBodySize, len(e.ResponseBody), want)
	}
}

func TestRedactOff(t *testing.T) {
	e := &snapshots.Exchange{URL: "http://h/?token=t", RequestHeader: http.Header{"Authorization": {"a"}}}
	r := New(Config{Off: true})
	r.Redact(e)
	if e.URL != "http://h/?token=t" || e.RequestHeader.Get("Authorization") != "a" || r.String() != "off" {
		t.Errorf("--no-redact changed %+v (%s)", e, r)
	}
}

// TestRedactNothingAllocates: an exchange with nothing secret costs no
// allocation (the recorder's hot path).
func TestRedactNothingAllocates(t *testing.T) {
	body := []byte(`{"user":"ann","items":[{"id":1,"name":"book","author":"x"}],"max_tokens":5}`)
	e := &snapshots.Exchange{
		URL:           "http://api.test/v1/orders?page=2&sort_key=id",
		RequestHeader: http.Header{"Accept": {"*/*"}, "Content-Type": {"application/json"}, "X-Request-Id": {"r1"}},
		RequestBody:   body, ResponseBody: []byte(`a=1&b=2`),
		ResponseHeader: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}},
	}
	r := New(Config{Query: []string{"q"}, Fields: []string{"f"}})
	if n := testing.AllocsPerRun(100, func() { r.Redact(e) }); n != 0 {
		t.Errorf("Redact allocated %v times for an exchange without secrets; want 0", n)
	}
}

func TestConfigCheck(t *testing.T) {
	var warn strings.Builder
	if err := (&Config{Query: []string{"a:b"}}).Check("record", &warn); err == nil || !strings.Contains(err.Error(), "--redact-query") {
		t.Errorf("bad name: %v", err)
	}
	if err := (&Config{Off: true, Fields: []string{"x"}}).Check("record", &warn); err == nil {
		t.Error("--redact-field with --no-redact: no error")
	}
	if err := (&Config{Off: true}).Check("record", &warn); err != nil || strings.Count(warn.String(), "\n") != 1 {
		t.Errorf("--no-redact: %v, warning %q; want one line", err, warn.String())
	}
}

func FuzzRedactBody(f *testing.F) {
	for _, s := range []string{`{"password":"x"}`, `{"a":[{"token":1e5}]}`, `{"k":"\`, `a=1&token=2`, `[[[[{"secret":"`, `"://u:p@`} {
		f.Add([]byte(s))
	}
	r := New(Config{Fields: []string{"f"}})
	f.Fuzz(func(t *testing.T, b []byte) {
		in := bytes.Clone(b)
		for _, ct := range []string{"application/json", "application/x-www-form-urlencoded", ""} {
			out, changed := r.plainBody(ct, b)
			if !bytes.Equal(b, in) {
				t.Fatalf("input changed")
			}
			if !changed && !bytes.Equal(out, b) {
				t.Fatalf("unchanged but different")
			}
			if ct == "application/json" && json.Valid(b) && !json.Valid(out) {
				t.Fatalf("valid JSON became invalid: %q -> %q", b, out)
			}
			again, _ := r.plainBody(ct, out)
			if !bytes.Equal(again, out) {
				t.Fatalf("not idempotent: %q -> %q -> %q", b, out, again)
			}
		}
	})
}

// TestRedactKeepsAuthScheme: a credential keeps its scheme, so that what
// replays it knows what to supply; other secret headers are masked whole.
func TestRedactKeepsAuthScheme(t *testing.T) {
	r := New(Config{})
	for _, tc := range []struct{ name, v, want string }{
		{"Authorization", "Bearer abc", "Bearer " + Mask},
		{"Authorization", "Basic Zm9vOmJhcg==", "Basic " + Mask},
		{"Proxy-Authorization", "Digest username=\"u\", response=\"x\"", "Digest " + Mask},
		{"Authorization", "abc", Mask},
		{"Authorization", "Bearer " + Mask, "Bearer " + Mask},
		{"Authorization", Mask, Mask},
		{"Cookie", "session=abc; theme=dark", Mask},
		{"X-Api-Key", "Key abc", Mask},
	} {
		e := &snapshots.Exchange{URL: "http://h/", RequestHeader: http.Header{tc.name: {tc.v}}}
		r.Redact(e)
		if got := e.RequestHeader.Get(tc.name); got != tc.want {
			t.Errorf("%s: %s → %q, want %q", tc.name, tc.v, got, tc.want)
		}
	}
}
