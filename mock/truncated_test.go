package mock

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/replaykit/replay/snapshots"
)

// TestTruncatedResponse: a recorded response whose body was cut at
// recording is refused with a 502 that says so, unless AllowTruncated; then
// it is served cut. Either way it is counted, and the summary names it.
func TestTruncatedResponse(t *testing.T) {
	c := testCA(t)
	var exs []*snapshots.Exchange
	for i, origin := range []string{"http://plain.test:8080", "https://api.test"} {
		cut := rec(int64(2*i+1), "GET", origin+"/report", "", "")
		cut.ResponseBody, cut.ResponseBodySize = []byte("first 16 bytes.."), 5000
		whole := rec(int64(2*i+2), "GET", origin+"/small", "", "")
		whole.ResponseBody, whole.ResponseBodySize = []byte("all of it"), 9
		exs = append(exs, cut, whole)
	}
	for _, allow := range []bool{false, true} {
		s := newServer(t, Config{Exchanges: exs, CA: c, AllowTruncated: allow})
		client := proxyClient(t, startMock(t, s), c.Pool())
		for _, origin := range []string{"http://plain.test:8080", "https://api.test"} {
			resp, body := do(t, client, "GET", origin+"/report", nil)
			switch {
			case !allow && (resp.StatusCode != http.StatusBadGateway || resp.Header.Get(MarkerHeader) != "truncated" ||
				!strings.Contains(string(body), "was cut at recording (16 of 5000 bytes kept): record again with a larger --body-limit, or pass --allow-truncated")):
				t.Errorf("%s/report refused: %d %q %q", origin, resp.StatusCode, resp.Header.Get(MarkerHeader), body)
			case allow && (resp.StatusCode != http.StatusOK || resp.Header.Get(MarkerHeader) != "truncated" || string(body) != "first 16 bytes.."):
				t.Errorf("%s/report allowed: %d %q %q", origin, resp.StatusCode, resp.Header.Get(MarkerHeader), body)
			}
			if resp, body := do(t, client, "GET", origin+"/small", nil); resp.StatusCode != http.StatusOK || string(body) != "all of it" {
				t.Errorf("%s/small: %d %q", origin, resp.StatusCode, body)
			}
		}
		if st := s.Stats(); st.Truncated != 2 || st.Exact != 4 || st.Misses != 0 {
			t.Errorf("allow %v: stats %+v, want 2 truncated of 4 exact", allow, st)
		}
		var sum bytes.Buffer
		s.WriteSummary(&sum)
		want := "2 calls refused (502): their recorded response body was cut at recording; record again with a larger --body-limit, or pass --allow-truncated\n"
		if allow {
			want = "2 calls were served a recorded response body cut at recording (--allow-truncated)\n"
		}
		if !strings.HasSuffix(sum.String(), want) {
			t.Errorf("allow %v: summary %q, want it to end with %q", allow, sum.String(), want)
		}
	}
}
