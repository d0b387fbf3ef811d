package snapshots

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// sampleExchange returns a deterministic exchange numbered i.
func sampleExchange(i int) *Exchange {
	dir := Inbound
	svc := "127.0.0.1:8080"
	if i%3 == 0 {
		dir, svc = Outbound, "catalog.example:443"
	}
	body := []byte(fmt.Sprintf(`{"order":%d,"items":[1,2,3]}`, i))
	return &Exchange{
		Direction:        dir,
		Protocol:         "http",
		Service:          svc,
		Start:            time.Unix(1700000000, int64(i)*1000).UTC(),
		Duration:         time.Duration(i%50+1) * time.Millisecond,
		Method:           "GET",
		URL:              fmt.Sprintf("http://%s/orders/%d?x=1", svc, i),
		Proto:            "HTTP/1.1",
		RequestHeader:    http.Header{"Accept": {"application/json"}, "X-Multi": {"a", "b"}},
		Status:           200,
		ResponseHeader:   http.Header{"Content-Type": {"application/json"}},
		ResponseBody:     body,
		ResponseBodySize: int64(len(body)),
		TraceID:          "4bf92f3577b34da6a3ce929d0e0e4736",
	}
}

func sampleStatement(i int) *Statement {
	return &Statement{
		ExchangeID:  int64(i%10 + 1),
		Conn:        int64(i % 4),
		Start:       time.Unix(1700000000, int64(i)*777).UTC(),
		Duration:    time.Duration(i) * time.Microsecond,
		Protocol:    ProtocolExtended,
		SQL:         fmt.Sprintf("SELECT * FROM order_items WHERE order_id = %d", i),
		Fingerprint: "SELECT * FROM order_items WHERE order_id = ?",
		Rows:        3,
		CommandTag:  "SELECT 3",
	}
}

func collect[T any](t *testing.T, seq func(func(T, error) bool)) []T {
	t.Helper()
	var out []T
	for v, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

func TestWriteRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.snap")
	rules, err := ParseRules([]string{"GET /orders/{order}/status"})
	if err != nil {
		t.Fatal(err)
	}
	w, err := Create(path, Options{Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	var want []*Exchange
	for i := 1; i <= 100; i++ {
		e := sampleExchange(i)
		w.CountSeen(e.Direction)
		w.AddExchange(e)
		want = append(want, e)
	}
	var wantSt []*Statement
	for i := 1; i <= 30; i++ {
		s := sampleStatement(i)
		w.AddStatement(s)
		wantSt = append(wantSt, s)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := collect(t, s.Exchanges(context.Background(), Filter{}))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("exchanges (-want +got):\n%s", diff)
	}
	if got[0].Endpoint != "GET /orders/{id}" {
		t.Errorf("endpoint = %q", got[0].Endpoint)
	}
	gotSt := collect(t, s.Statements(context.Background()))
	if diff := cmp.Diff(wantSt, gotSt); diff != "" {
		t.Errorf("statements (-want +got):\n%s", diff)
	}
	filters := []struct {
		f    Filter
		want int
	}{
		{Filter{Direction: Outbound}, 33},
		{Filter{Direction: Inbound}, 67},
		{Filter{Services: []string{"catalog.example:443"}}, 33},
		{Filter{Services: []string{"catalog.example:443", "127.0.0.1:8080"}}, 100},
		{Filter{Direction: Inbound, Services: []string{"catalog.example:443"}}, 0},
		{Filter{Services: []string{"nope:1"}}, 0},
	}
	for _, tt := range filters {
		if got := len(collect(t, s.Exchanges(context.Background(), tt.f))); got != tt.want {
			t.Errorf("Exchanges(%+v) = %d, want %d", tt.f, got, tt.want)
		}
	}
	if e, err := s.Exchange(context.Background(), 5); err != nil || e.ID != 5 {
		t.Errorf("Exchange(5) = %v, %v", e, err)
	}
	if _, err := s.Exchange(context.Background(), 5000); err == nil {
		t.Errorf("Exchange(5000) found one")
	}
	stats, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	wantStats := CaptureStats{InboundSeen: 67, InboundRecorded: 67, OutboundSeen: 33, OutboundRecorded: 33, Statements: 30}
	if diff := cmp.Diff(wantStats, stats); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantStats, w.Stats()); diff != "" {
		t.Errorf("writer stats (-want +got):\n%s", diff)
	}
	gotRules, err := s.Rules()
	if err != nil {
		t.Fatal(err)
	}
	if len(gotRules) != 1 || gotRules[0].String() != "GET /orders/{order}/status" {
		t.Errorf("rules = %v", gotRules)
	}
	// A finished snapshot is one file, and reading it adds none.
	s.Close()
	for _, suffix := range []string{"-wal", "-shm", "-journal"} {
		if _, err := os.Stat(path + suffix); err == nil {
			t.Errorf("%s left next to the snapshot", path+suffix)
		}
	}
}

// TestHeaderJSON checks that the writer's header encoding decodes, with
// encoding/json as readers do, to what encoding/json's own encoding does
// (which escapes <, > and & besides; the writer needs not).
func TestHeaderJSON(t *testing.T) {
	many := http.Header{}
	for i := 0; i < 40; i++ { // more keys than fit the encoder's stack array
		many.Add(fmt.Sprintf("X-Key-%02d", i), fmt.Sprint(i))
	}
	tests := []struct {
		name string
		h    http.Header
	}{
		{"one", http.Header{"Accept": {"*/*"}}},
		{"several values", http.Header{"Set-Cookie": {"a=1", "b=2"}, "Vary": {"Accept"}}},
		{"empty value", http.Header{"X-Empty": {""}, "X-None": {}}},
		{"escapes", http.Header{"X-Quote": {`say "hi" \\ now`}, "X-Ctl": {"a\tb\nc\x00"}, "X-Html": {"<a>&</a>"}}},
		{"unicode and bad utf-8", http.Header{"X-Name": {"Grüße, 世界"}, "X-Bad": {"\xff\xfe"}}},
		{"many", many},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := json.Marshal(tt.h)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := headerJSON(tt.h).(string)
			var gotH, wantH http.Header
			if err := json.Unmarshal([]byte(got), &gotH); err != nil {
				t.Fatalf("headerJSON = %s: %v", got, err)
			}
			if err := json.Unmarshal(want, &wantH); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wantH, gotH); diff != "" {
				t.Errorf("headerJSON = %s decodes to (-want +got):\n%s", got, diff)
			}
			if !strings.HasPrefix(got, `{"`) || strings.ContainsAny(got, "\n\t") {
				t.Errorf("headerJSON = %q", got)
			}
		})
	}
	if got := headerJSON(http.Header{}); got != nil {
		t.Errorf("empty header = %v, want nil (NULL)", got)
	}
}
