package hopbyhop

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRemove(t *testing.T) {
	h := http.Header{
		"Connection":        {"close, X-Conn-Only"},
		"X-Conn-Only":       {"1"},
		"Keep-Alive":        {"timeout=5"},
		"Transfer-Encoding": {"chunked"},
		"Te":                {"trailers"},
		"Content-Type":      {"text/plain"},
		"Content-Length":    {"3"},
	}
	Remove(h)
	want := http.Header{"Content-Type": {"text/plain"}, "Content-Length": {"3"}}
	if d := cmp.Diff(want, h); d != "" {
		t.Errorf("after Remove (-want +got):\n%s", d)
	}
}
