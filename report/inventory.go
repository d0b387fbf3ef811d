package report

import (
	"io"
	"slices"
	"strconv"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/snapshots"
)

// InventoryText writes inv, what a snapshot holds, as aligned text tables:
// a line of totals, the capture statistics, then the endpoints and the most
// frequent SQL fingerprints. Figures are printed exactly, without thousands
// separators, so that scripts can read them.
func InventoryText(w io.Writer, inv *snapshots.Inventory) error {
	e := &errWriter{w: w}
	e.printf("snapshot %s: %s (%d inbound, %d outbound), %s",
		inv.Path, plural(int(inv.Exchanges), "exchange"), inv.Inbound, inv.Outbound, plural(int(inv.Statements), "SQL statement"))
	if inv.Unattributed > 0 {
		e.printf(" (%d not attributed to a request)", inv.Unattributed)
	}
	if notCounted(inv) {
		e.printf(" (SQL not counted: none recorded; record with --postgres or --mysql to count it)")
	}
	e.println("")
	c := inv.Capture
	e.printf("captured: inbound %d of %d seen, outbound %d of %d seen, %s",
		c.InboundRecorded, c.InboundSeen, c.OutboundRecorded, c.OutboundSeen, plural(int(c.Statements), "statement"))
	if inv.Redaction != "" {
		e.printf("; redaction: %s", inv.Redaction)
	}
	e.println("")
	if len(inv.Endpoints) > 0 {
		t := newTable([]string{"DIRECTION", "SERVICE", "ENDPOINT", "COUNT", "2XX", "3XX", "4XX", "5XX", "FAILED", "AVG MS", "P95 MS", "SQL/REQ"},
			3, 4, 5, 6, 7, 8, 9, 10, 11)
		for _, x := range inv.Endpoints {
			sql := "-" // statements belong to inbound requests
			if x.Direction == snapshots.Inbound {
				sql = inventorySQL(x)
			}
			st := x.Status
			t.add(string(x.Direction), x.Service, x.Endpoint, exact(x.Count),
				exact(st.Success+st.Informational), exact(st.Redirect), exact(st.ClientError),
				exact(st.ServerError), exact(st.Failed), figure(x.AvgMS), figure(x.P95MS), sql)
		}
		e.println("")
		t.write(e, "")
	}
	if len(inv.Fingerprints) > 0 {
		t := newTable([]string{"COUNT", "TOTAL MS", "STATEMENT"}, 0, 1)
		for _, f := range inv.Fingerprints {
			t.add(exact(f.Count), figure(f.TotalMS), f.Fingerprint)
		}
		e.println("")
		t.write(e, "")
	}
	return e.err
}

// inventorySQL formats an inbound endpoint's statements per request:
// "2.25" when exact, "~2.25±0.08" when estimated, "≥0.5" when a lower bound.
func inventorySQL(x snapshots.EndpointSummary) string {
	switch x.SQLMethod {
	case analyzer.SQLMethodNotCounted:
		return "not counted"
	case "estimated":
		return "~" + figure(x.SQLPerRequest) + "±" + figure(x.SQLMargin)
	case "unknown":
		return "≥" + figure(x.SQLPerRequest)
	}
	return figure(x.SQLPerRequest)
}

// notCounted reports whether inv's SQL was not counted (InventorySQL).
func notCounted(inv *snapshots.Inventory) bool {
	return slices.ContainsFunc(inv.Endpoints, func(x snapshots.EndpointSummary) bool {
		return x.SQLMethod == analyzer.SQLMethodNotCounted
	})
}

// exact formats an integer as it is: "12345".
func exact(n int64) string { return strconv.FormatInt(n, 10) }

// figure formats a figure in as few digits as tell it exactly: "30.688", "9".
func figure(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// InventoryDocument is the JSON of `replay inspect --format json`: what a
// snapshot holds (snapshots.Inventory, its keys in its order) and its
// schema version (docs/schema/inspect.json).
type InventoryDocument struct {
	SchemaVersion int                            `json:"schema_version"`
	Path          string                         `json:"snapshot"`
	Exchanges     int64                          `json:"exchanges"`
	Inbound       int64                          `json:"inbound"`
	Outbound      int64                          `json:"outbound"`
	Statements    int64                          `json:"statements"`
	Unattributed  int64                          `json:"unattributed_statements"`
	Endpoints     []InventoryEndpoint            `json:"endpoints"`
	Fingerprints  []snapshots.FingerprintSummary `json:"fingerprints"`
	Capture       snapshots.CaptureStats         `json:"capture"`
	Redaction     string                         `json:"redaction,omitempty"`
}

// InventoryEndpoint is one endpoint of an InventoryDocument
// (snapshots.EndpointSummary).
type InventoryEndpoint struct {
	Direction  snapshots.Direction     `json:"direction"`
	Service    string                  `json:"service"`
	Endpoint   string                  `json:"endpoint"`
	Count      int64                   `json:"count"`
	Status     snapshots.StatusClasses `json:"status"`
	AvgMS      float64                 `json:"avg_ms"`
	P95MS      float64                 `json:"p95_ms"`
	Statements int64                   `json:"statements"`
	// SQLPerRequest is nil (left out) when the SQL was not counted
	// (SQLMethod analyzer.SQLMethodNotCounted): no figure, not a zero.
	SQLPerRequest *float64 `json:"sql_per_request,omitempty"`
	SQLMethod     string   `json:"sql_method,omitempty"`
	SQLMargin     float64  `json:"sql_margin,omitempty"`
}

// InventoryJSON writes inv as JSON (InventoryDocument), indented.
func InventoryJSON(w io.Writer, inv *snapshots.Inventory) error {
	d := InventoryDocument{SchemaVersion: JSONSchemaVersion, Path: inv.Path, Exchanges: inv.Exchanges, Inbound: inv.Inbound,
		Outbound: inv.Outbound, Statements: inv.Statements, Unattributed: inv.Unattributed, Fingerprints: inv.Fingerprints,
		Capture: inv.Capture, Redaction: inv.Redaction}
	if inv.Endpoints != nil {
		d.Endpoints = []InventoryEndpoint{}
	}
	for _, x := range inv.Endpoints {
		e := InventoryEndpoint{Direction: x.Direction, Service: x.Service, Endpoint: x.Endpoint, Count: x.Count, Status: x.Status,
			AvgMS: x.AvgMS, P95MS: x.P95MS, Statements: x.Statements, SQLMethod: x.SQLMethod, SQLMargin: x.SQLMargin}
		if x.SQLMethod != analyzer.SQLMethodNotCounted {
			e.SQLPerRequest = &x.SQLPerRequest
		}
		d.Endpoints = append(d.Endpoints, e)
	}
	return writeJSON(w, d)
}
