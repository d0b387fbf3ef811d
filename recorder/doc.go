// Package recorder captures a service's HTTP traffic into a snapshot.
//
// Inbound is a reverse proxy (httputil.ReverseProxy) put in front of the app:
// it forwards every request to the app and records the exchange. Outbound is a
// forward proxy (elazarl/goproxy) that the app reaches through HTTP_PROXY and
// HTTPS_PROXY: it intercepts TLS with replay's own CA and records the calls
// the app makes to upstream services, each linked to the inbound request it
// belongs to. Both write through a Sink, normally a *snapshots.Writer.
//
// ImportPcap reads a tcpdump or Wireshark capture (pcap or pcapng) offline and
// records the HTTP/1 exchanges in it as inbound exchanges.
//
// It does not replay or mock anything; see packages replayer and mock.
package recorder
