// Package recorder captures a service's HTTP traffic into a snapshot.
//
// Inbound is a reverse proxy (httputil.ReverseProxy) put in front of the app:
// it forwards every request to the app and records the exchange. Outbound is a
// forward proxy (elazarl/goproxy) that the app reaches through HTTP_PROXY and
// HTTPS_PROXY: it intercepts TLS with replay's own CA and records the calls
// the app makes to upstream services, each linked to the inbound request it
// belongs to. Both write through a Sink, normally a *snapshots.Writer.
//
// Session puts them together for one recording of a running app: it
// listens on every address, creates the snapshot, and runs inbound and
// outbound proxies plus a PostgreSQL proxy (any PostgresProxy, e.g.
// *sqlcount.Proxy, which the caller makes) that all write through one Tally
// and share the inbound requests in flight, so calls and statements are
// linked to the request that caused them. Tally counts what it passes on to
// the snapshot, per endpoint, for a summary (TallySummary.WriteText renders
// it). Stop ends a session gracefully.
//
// ImportPcap reads a tcpdump or Wireshark capture (pcap or pcapng) offline and
// records the HTTP/1 exchanges in it as inbound exchanges; PcapStats says
// what else the capture held (WriteText) and why it yielded nothing (Warning).
//
// It does not replay or mock anything (see packages replayer and mock), nor
// speak the PostgreSQL protocol itself (see package sqlcount), nor print on
// its own: the summaries go to the io.Writer the caller gives.
package recorder
