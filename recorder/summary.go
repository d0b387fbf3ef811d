package recorder

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/replaykit/replay/snapshots"
)

// WriteText writes what a recording to the snapshot path holds: the
// exchanges and statements recorded, a table of the exchanges per endpoint,
// and what the capture saw against what it recorded (cs, as the snapshot's
// Stats gives it). withSQL adds the SQL statements per inbound
// request and the statement counts, for a recording with a SQL proxy.
func (s TallySummary) WriteText(w io.Writer, path string, cs snapshots.CaptureStats, withSQL bool) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "recorded %s and %s to %s\n",
		count(cs.InboundRecorded+cs.OutboundRecorded, "exchange"), count(cs.Statements, "SQL statement"), path)
	if len(s.Rows) > 0 {
		writeTallyRows(&b, s.Rows, withSQL)
	}
	fmt.Fprintf(&b, "capture: inbound %d seen, %d recorded; outbound %d seen, %d recorded",
		cs.InboundSeen, cs.InboundRecorded, cs.OutboundSeen, cs.OutboundRecorded)
	if withSQL {
		fmt.Fprintf(&b, "; %s, %d attributed to requests", count(s.Statements, "statement"), s.Attributed)
	}
	b.WriteByte('\n')
	_, err := w.Write(b.Bytes())
	return err
}

// count is "1 thing" or "n things".
func count(n int64, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.FormatInt(n, 10) + " " + thing + "s"
}

// writeTallyRows writes the table of exchanges per endpoint.
func writeTallyRows(w io.Writer, rows []TallyRow, withSQL bool) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "DIRECTION\tSERVICE\tENDPOINT\tEXCHANGES")
	if withSQL {
		fmt.Fprint(tw, "\tSQL/REQUEST")
	}
	fmt.Fprintln(tw)
	for _, row := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d", row.Direction, row.Service, row.Endpoint, row.Exchanges)
		if withSQL {
			if row.Direction == snapshots.Inbound {
				fmt.Fprintf(tw, "\t%s", row.sqlFigure())
			} else {
				fmt.Fprint(tw, "\t-")
			}
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

// sqlFigure formats the statements per request of an inbound row: "2.0"
// when exact, "~2.2 ±0.3 (est.)" when estimated, "≥0.5 (unknown)" when
// statements could not be attributed nor shared out.
func (row TallyRow) sqlFigure() string {
	switch row.SQLMethod {
	case "estimated":
		return fmt.Sprintf("~%.1f ±%s (est.)", row.SQLPerRequest, marginText(row.SQLMargin))
	case "unknown":
		return fmt.Sprintf("≥%.1f (unknown)", row.SQLPerRequest)
	case "exact":
		return fmt.Sprintf("%.1f", row.SQLPerRequest)
	}
	return fmt.Sprintf("%.1f", float64(row.SQL)/float64(row.Exchanges))
}

// marginText is an estimate's margin to one decimal; one that rounds to 0
// without being 0 is "<0.1", not the "0.0" that would claim an exact
// figure.
func marginText(m float64) string {
	switch {
	case m == 0:
		return "0"
	case m < 0.05:
		return "<0.1"
	}
	return fmt.Sprintf("%.1f", m)
}

// WriteText writes one line saying what the capture held besides the
// exchanges: its packets and format, the HTTP connections and their ports,
// and the counts of what was incomplete, lost or skipped, when not zero.
func (st PcapStats) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "pcap: %s (%s); %s", nThings(st.Packets, "packet", "packets"), st.Format, nThings(st.Connections, "HTTP connection", "HTTP connections"))
	if len(st.Ports) > 0 {
		ports := make([]string, len(st.Ports))
		for i, p := range st.Ports {
			ports[i] = strconv.Itoa(p)
		}
		fmt.Fprintf(&b, " on port %s", strings.Join(ports, ", "))
	}
	if st.HTTP2Connections > 0 {
		fmt.Fprintf(&b, " (%d of them HTTP/2, h2c)", st.HTTP2Connections)
	}
	for _, n := range []struct {
		n         int64
		one, many string
	}{
		{st.Incomplete, "exchange incomplete (see its error)", "exchanges incomplete (see their error)"},
		{st.OrphanResponses, "response to a request before the capture", "responses to requests before the capture"},
		{st.Gaps, "gap where packets were lost", "gaps where packets were lost"},
		{st.HTTP2Broken, "HTTP/2 connection not read past a gap (its later streams are lost)", "HTTP/2 connections not read past a gap (their later streams are lost)"},
		{st.CutPackets, "packet cut short by the capture's snapshot length (capture with -s 0)", "packets cut short by the capture's snapshot length (capture with -s 0)"},
		{st.TLSConnections, "TLS connection skipped (encrypted)", "TLS connections skipped (encrypted)"},
		{st.OtherConnections, "connection skipped (not HTTP/1 or h2c)", "connections skipped (not HTTP/1 or h2c)"},
	} {
		if n.n > 0 {
			b.WriteString("; " + nThings(n.n, n.one, n.many))
		}
	}
	b.WriteByte('\n')
	_, err := io.WriteString(w, b.String())
	return err
}

// Warning says why a capture yielded no exchange, and what to do about it;
// it is "" when the capture yielded some.
func (st PcapStats) Warning() string {
	switch {
	case st.Exchanges > 0:
		return ""
	case st.TCPPackets == 0:
		return "no TCP packet in the capture to or from the ports given"
	case st.TLSConnections > 0:
		return "no HTTP exchange in the capture, only TLS: capture the plain HTTP between the TLS terminator and the app"
	}
	return "no HTTP exchange (HTTP/1 or h2c) in the capture"
}

// nThings is "1 ONE" or "N MANY".
func nThings[N int | int64](n N, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
