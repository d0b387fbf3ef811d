package snapshots

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestInspect(t *testing.T) {
	path := filepath.Join(t.TempDir(), "inv.snap")
	w, err := Create(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	add := func(e *Exchange) int64 {
		w.CountSeen(e.Direction)
		w.AddExchange(e)
		return e.ID
	}
	for i := 1; i <= 20; i++ {
		e := &Exchange{Direction: Inbound, Service: "127.0.0.1:8080", Method: "GET",
			URL: "/orders/" + string(rune('0'+i%10)), Status: 200, Duration: time.Duration(i) * time.Millisecond}
		switch i {
		case 7:
			e.Status = 404
		case 8:
			e.Status, e.Error = 0, "upstream reset"
		}
		id := add(e)
		if i <= 10 {
			for j := 0; j < 3; j++ {
				w.AddStatement(&Statement{ExchangeID: id, SQL: "SELECT 1", Fingerprint: "SELECT ?", Duration: time.Millisecond})
			}
		}
	}
	for i := 0; i < 2; i++ {
		id := add(&Exchange{Direction: Inbound, Service: "127.0.0.1:8080", Method: "POST", URL: "/orders", Status: 201, Duration: 5 * time.Millisecond})
		w.AddStatement(&Statement{ExchangeID: id, SQL: "INSERT INTO orders VALUES (1)", Fingerprint: "INSERT INTO orders VALUES (?)"})
		w.AddStatement(&Statement{ExchangeID: id, SQL: "COMMIT", Fingerprint: "COMMIT"})
		// An outbound call of this request; statements never count there.
		add(&Exchange{Direction: Outbound, Service: "catalog.example:443", Method: "GET", URL: "https://catalog.example/v1/items", Status: 503, ParentID: id, Duration: 2 * time.Millisecond})
	}
	add(&Exchange{Direction: Outbound, Service: "catalog.example:443", Method: "GET", URL: "https://catalog.example/v1/items", Status: 302, Duration: 4 * time.Millisecond})
	for i := 0; i < 5; i++ {
		w.AddStatement(&Statement{SQL: "SELECT now()"}) // no fingerprint: the text stands in
	}
	w.AddStatement(&Statement{ExchangeID: 9999, SQL: "SELECT 2", Fingerprint: "SELECT ?"})
	w.CountSeen(Inbound)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	inv, err := Inspect(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	want := &Inventory{
		Path: path, Exchanges: 25, Inbound: 22, Outbound: 3, Statements: 40, Unattributed: 6,
		Endpoints: []EndpointSummary{
			{Direction: Inbound, Service: "127.0.0.1:8080", Endpoint: "GET /orders/{id}", Count: 20,
				Status: StatusClasses{Success: 18, ClientError: 1, Failed: 1},
				AvgMS:  10.5, P95MS: 19, Statements: 30, SQLPerRequest: 1.5},
			{Direction: Inbound, Service: "127.0.0.1:8080", Endpoint: "POST /orders", Count: 2,
				Status: StatusClasses{Success: 2}, AvgMS: 5, P95MS: 5, Statements: 4, SQLPerRequest: 2},
			{Direction: Outbound, Service: "catalog.example:443", Endpoint: "GET /v1/items", Count: 3,
				Status: StatusClasses{Redirect: 1, ServerError: 2}, AvgMS: 2.667, P95MS: 4},
		},
		Fingerprints: []FingerprintSummary{
			{Fingerprint: "SELECT ?", Count: 31, TotalMS: 30},
			{Fingerprint: "SELECT now()", Count: 5},
			{Fingerprint: "COMMIT", Count: 2},
			{Fingerprint: "INSERT INTO orders VALUES (?)", Count: 2},
		},
		Capture: CaptureStats{InboundSeen: 23, InboundRecorded: 22, OutboundSeen: 3, OutboundRecorded: 3, Statements: 40},
	}
	if diff := cmp.Diff(want, inv); diff != "" {
		t.Errorf("Inspect (-want +got):\n%s", diff)
	}
}

func TestInspectEmpty(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.snap")
	w, err := Create(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	inv, err := Inspect(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if inv.Exchanges != 0 || len(inv.Endpoints) != 0 || inv.Endpoints == nil || inv.Fingerprints == nil {
		t.Errorf("empty inventory = %+v", inv)
	}
}
