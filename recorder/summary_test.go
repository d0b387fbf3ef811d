package recorder

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replaykit/replay/snapshots"
)

func TestTallySummaryWriteText(t *testing.T) {
	sum := TallySummary{
		Rows: []TallyRow{
			{Direction: snapshots.Inbound, Service: "127.0.0.1:8080", Endpoint: "GET /orders/{id}", Exchanges: 3, SQL: 7},
			{Direction: snapshots.Inbound, Service: "127.0.0.1:8080", Endpoint: "POST /orders", Exchanges: 12, SQL: 36},
			{Direction: snapshots.Outbound, Service: "catalog.example:443", Endpoint: "GET /v1/items", Exchanges: 2},
		},
		Statements: 45, Attributed: 43,
	}
	cs := snapshots.CaptureStats{InboundSeen: 16, InboundRecorded: 15, OutboundSeen: 2, OutboundRecorded: 2, Statements: 45}
	for _, tt := range []struct {
		name    string
		sum     TallySummary
		withSQL bool
		want    string
	}{
		{"with SQL", sum, true, `recorded 17 exchanges and 45 SQL statements to orders.snap
DIRECTION  SERVICE              ENDPOINT          EXCHANGES  SQL/REQUEST
inbound    127.0.0.1:8080       GET /orders/{id}  3          2.3
inbound    127.0.0.1:8080       POST /orders      12         3.0
outbound   catalog.example:443  GET /v1/items     2          -
capture: inbound 16 seen, 15 recorded; outbound 2 seen, 2 recorded; 45 statements, 43 attributed to requests
`},
		{"without SQL", sum, false, `recorded 17 exchanges and 45 SQL statements to orders.snap
DIRECTION  SERVICE              ENDPOINT          EXCHANGES
inbound    127.0.0.1:8080       GET /orders/{id}  3
inbound    127.0.0.1:8080       POST /orders      12
outbound   catalog.example:443  GET /v1/items     2
capture: inbound 16 seen, 15 recorded; outbound 2 seen, 2 recorded
`},
		{"nothing recorded", TallySummary{}, false, `recorded 17 exchanges and 45 SQL statements to orders.snap
capture: inbound 16 seen, 15 recorded; outbound 2 seen, 2 recorded
`},
		{"one of each", TallySummary{Rows: sum.Rows[:1], Statements: 1, Attributed: 1}, true, `recorded 1 exchange and 1 SQL statement to orders.snap
DIRECTION  SERVICE         ENDPOINT          EXCHANGES  SQL/REQUEST
inbound    127.0.0.1:8080  GET /orders/{id}  3          2.3
capture: inbound 1 seen, 1 recorded; outbound 0 seen, 0 recorded; 1 statement, 1 attributed to requests
`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			cs := cs
			if tt.name == "one of each" {
				cs = snapshots.CaptureStats{InboundSeen: 1, InboundRecorded: 1, Statements: 1}
			}
			if err := tt.sum.WriteText(&b, "orders.snap", cs, tt.withSQL); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, b.String()); diff != "" {
				t.Errorf("WriteText (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPcapStatsText(t *testing.T) {
	for _, tt := range []struct {
		name          string
		st            PcapStats
		text, warning string
	}{
		{"clean", PcapStats{Format: "pcapng", Packets: 120, TCPPackets: 118, Connections: 3, Exchanges: 9, Ports: []int{80, 8080}},
			"pcap: 120 packets (pcapng); 3 HTTP connections on port 80, 8080\n", ""},
		{"troubled", PcapStats{Format: "pcap (gzip)", Packets: 50, TCPPackets: 50, Connections: 1, Exchanges: 2, Incomplete: 1,
			OrphanResponses: 2, Gaps: 3, CutPackets: 4, TLSConnections: 5, OtherConnections: 6, Ports: []int{80}},
			"pcap: 50 packets (pcap (gzip)); 1 HTTP connection on port 80; 1 exchange incomplete (see its error)" +
				"; 2 responses to requests before the capture; 3 gaps where packets were lost" +
				"; 4 packets cut short by the capture's snapshot length (capture with -s 0)" +
				"; 5 TLS connections skipped (encrypted); 6 connections skipped (not HTTP/1 or h2c)\n", ""},
		{"no TCP", PcapStats{Format: "pcap", Packets: 7},
			"pcap: 7 packets (pcap); 0 HTTP connections\n",
			"no TCP packet in the capture to or from the ports given"},
		{"only TLS", PcapStats{Format: "pcap", Packets: 7, TCPPackets: 7, TLSConnections: 1},
			"pcap: 7 packets (pcap); 0 HTTP connections; 1 TLS connection skipped (encrypted)\n",
			"no HTTP exchange in the capture, only TLS: capture the plain HTTP between the TLS terminator and the app"},
		{"no HTTP", PcapStats{Format: "pcap", Packets: 7, TCPPackets: 7},
			"pcap: 7 packets (pcap); 0 HTTP connections\n",
			"no HTTP exchange (HTTP/1 or h2c) in the capture"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := tt.st.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.text, b.String()); diff != "" {
				t.Errorf("WriteText (-want +got):\n%s", diff)
			}
			if got := tt.st.Warning(); got != tt.warning {
				t.Errorf("Warning() = %q, want %q", got, tt.warning)
			}
		})
	}
}

// TestSQLFigure: an estimate's margin too small for one decimal is "<0.1",
// never "±0.0", which would read as exact.
func TestSQLFigure(t *testing.T) {
	for _, c := range []struct {
		row  TallyRow
		want string
	}{
		{TallyRow{SQLMethod: "estimated", SQLPerRequest: 2.2, SQLMargin: 0.31}, "~2.2 ±0.3 (est.)"},
		{TallyRow{SQLMethod: "estimated", SQLPerRequest: 0.01, SQLMargin: 0.02}, "~0.0 ±<0.1 (est.)"},
		{TallyRow{SQLMethod: "estimated", SQLPerRequest: 0, SQLMargin: 0}, "~0.0 ±0 (est.)"},
		{TallyRow{SQLMethod: "unknown", SQLPerRequest: 0.5}, "≥0.5 (unknown)"},
		{TallyRow{SQLMethod: "exact", SQLPerRequest: 2}, "2.0"},
	} {
		if got := c.row.sqlFigure(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.row, got, c.want)
		}
	}
}
