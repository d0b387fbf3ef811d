package recorder

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/replaykit/replay/snapshots"
)

const testTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// pcapScenario builds three connections to 10.0.0.2:8080: A carries five
// keep-alive exchanges (a request split across segments, a chunked response
// captured out of order and retransmitted, a gzip response, HEAD, 100
// Continue), B an HTTP/1.0 exchange whose response ends with the
// connection, and C a response cut short by the end of the capture and a
// request without a response. It returns the exchanges an import must make
// of it.
func pcapScenario(t testing.TB, cliA, cliB, cliC, srv string) (*pcapBuilder, []*snapshots.Exchange) {
	b := newPcapBuilder(t)
	a := b.conv(cliA, srv)
	bb := b.conv(cliB, srv)
	c := b.conv(cliC, srv)
	var want []*snapshots.Exchange
	conn := int64(1) // the connection of the exchanges to come: A 1, B 2, C 3
	ex := func(e snapshots.Exchange) *snapshots.Exchange {
		e.ID, e.ClientConn = int64(len(want)+1), conn
		e.Direction, e.Protocol = snapshots.Inbound, "http"
		if e.Proto == "" {
			e.Proto = "HTTP/1.1"
		}
		if e.Service == "" {
			e.Service = "shop.example:8080"
		}
		want = append(want, &e)
		return &e
	}

	a.handshake()
	// A1: one segment each way; secrets redacted; a trace id.
	start := a.client("GET /orders/17?full=1 HTTP/1.1\r\nHost: shop.example:8080\r\nUser-Agent: t/1\r\n" +
		"Authorization: Bearer s3cret\r\nTraceparent: " + testTraceparent + "\r\n\r\n")
	a1 := ex(snapshots.Exchange{
		Start: start, Method: "GET", URL: "http://shop.example:8080/orders/17?full=1",
		RequestHeader: http.Header{"User-Agent": {"t/1"}, "Authorization": {"Bearer " + Redacted}, "Traceparent": {testTraceparent}},
		TraceID:       "4bf92f3577b34da6a3ce929d0e0e4736",
	})
	// B starts meanwhile: HTTP/1.0, no Host.
	bb.handshake()
	bStart := bb.client("GET /health HTTP/1.0\r\nUser-Agent: probe\r\n\r\n")
	conn = 2
	b1 := ex(snapshots.Exchange{
		Start: bStart, Method: "GET", URL: "http://10.0.0.2:8080/health", Proto: "HTTP/1.0",
		Service: "10.0.0.2:8080", RequestHeader: http.Header{"User-Agent": {"probe"}},
	})
	conn = 1
	if strings.Contains(srv, "[") {
		b1.URL, b1.Service = "http://[fd00::2]:8080/health", "[fd00::2]:8080"
	}
	end := a.server("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 15\r\nSet-Cookie: sid=1\r\n\r\n{\"id\":17,\"x\":1}")
	a1.Duration, a1.Status = end.Sub(start), 200
	a1.ResponseHeader = http.Header{"Content-Type": {"application/json"}, "Content-Length": {"15"}, "Set-Cookie": {Redacted}}
	a1.ResponseBody, a1.ResponseBodySize = []byte(`{"id":17,"x":1}`), 15

	// B's response has no length: it ends when the server closes.
	bb.server("HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nok", "\n")
	end = bb.fin(false)
	bb.fin(true)
	b1.Duration, b1.Status = end.Sub(bStart), 200
	b1.ResponseHeader = http.Header{"Content-Type": {"text/plain"}}
	b1.ResponseBody, b1.ResponseBodySize = []byte("ok\n"), 3

	// A2: the request split mid-header and mid-body; the chunked response
	// captured out of order, then retransmitted.
	start = a.client("POST /orders HTTP/1.1\r\nHost: shop.exa",
		"mple:8080\r\nContent-Type: application/json\r\nContent-Length: 23\r\n\r\n{\"item\":",
		`"book","qty":2}`)
	s1 := a.seg(false, "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n7\r\n{\"id\":1")
	s2 := a.seg(false, "\r\nb\r\n,\"ok\":tr")
	s3 := a.seg(false, "ue}\r\n0\r\n\r\n")
	b.add(s1, s3)
	end = b.add(s2)
	b.add(s2)
	ex(snapshots.Exchange{
		Start: start, Duration: end.Sub(start), Method: "POST", URL: "http://shop.example:8080/orders",
		RequestHeader: http.Header{"Content-Type": {"application/json"}, "Content-Length": {"23"}},
		RequestBody:   []byte(`{"item":"book","qty":2}`), RequestBodySize: 23,
		Status: 201, ResponseHeader: http.Header{"Content-Type": {"application/json"}},
		ResponseBody: []byte(`{"id":1,"ok":true}`), ResponseBodySize: 18,
	})

	// A3: a gzip body stays gzip.
	gz := gzipped(t, strings.Repeat("console.log('hello');\n", 40))
	start = a.client("GET /static/app.js HTTP/1.1\r\nHost: shop.example:8080\r\nAccept-Encoding: gzip\r\n\r\n")
	end = a.server(fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n", len(gz))+string(gz[:len(gz)/2]),
		string(gz[len(gz)/2:]))
	ex(snapshots.Exchange{
		Start: start, Duration: end.Sub(start), Method: "GET", URL: "http://shop.example:8080/static/app.js",
		RequestHeader: http.Header{"Accept-Encoding": {"gzip"}},
		Status:        200, ResponseHeader: http.Header{"Content-Encoding": {"gzip"}, "Content-Length": {fmt.Sprint(len(gz))}},
		ResponseBody: gz, ResponseBodySize: int64(len(gz)),
	})

	// A4: a HEAD response has a length but no body.
	start = a.client("HEAD /orders/17 HTTP/1.1\r\nHost: shop.example:8080\r\n\r\n")
	end = a.server("HTTP/1.1 200 OK\r\nContent-Length: 15\r\nContent-Type: application/json\r\n\r\n")
	ex(snapshots.Exchange{
		Start: start, Duration: end.Sub(start), Method: "HEAD", URL: "http://shop.example:8080/orders/17",
		RequestHeader: http.Header{}, Status: 200,
		ResponseHeader: http.Header{"Content-Type": {"application/json"}, "Content-Length": {"15"}},
	})

	// A5: 100 Continue before the body; a 204 has no body.
	start = a.client("POST /upload HTTP/1.1\r\nHost: shop.example:8080\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
	a.server("HTTP/1.1 100 Continue\r\n\r\n")
	a.client("hello")
	end = a.server("HTTP/1.1 204 No Content\r\nX-Upload: ok\r\n\r\n")
	a.fin(true)
	a.fin(false)
	ex(snapshots.Exchange{
		Start: start, Duration: end.Sub(start), Method: "POST", URL: "http://shop.example:8080/upload",
		RequestHeader: http.Header{"Expect": {"100-continue"}, "Content-Length": {"5"}},
		RequestBody:   []byte("hello"), RequestBodySize: 5,
		Status: 204, ResponseHeader: http.Header{"X-Upload": {"ok"}},
	})

	// C: the capture ends inside a response, and before the answer to a
	// pipelined request.
	c.handshake()
	conn = 3
	start = c.client("GET /orders/18 HTTP/1.1\r\nHost: shop.example:8080\r\n\r\n")
	end = c.server("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + strings.Repeat("x", 40))
	ex(snapshots.Exchange{
		Start: start, Duration: end.Sub(start), Method: "GET", URL: "http://shop.example:8080/orders/18",
		RequestHeader: http.Header{}, Status: 200, ResponseHeader: http.Header{"Content-Length": {"100"}},
		ResponseBody: []byte(strings.Repeat("x", 40)), ResponseBodySize: 40,
		Error: "response cut short: the capture has 40 of 100 body bytes",
	})
	start = c.client("GET /orders/19 HTTP/1.1\r\nHost: shop.example:8080\r\n\r\n")
	ex(snapshots.Exchange{
		Start: start, Method: "GET", URL: "http://shop.example:8080/orders/19",
		RequestHeader: http.Header{}, Error: "no response in the capture",
	})
	return b, want
}

func gzipped(t testing.TB, s string) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func importPcap(t testing.TB, capture []byte, cfg PcapConfig) (*pcapSink, PcapStats) {
	t.Helper()
	sink := &pcapSink{}
	// Redacting, as the snapshot writer of record --from-pcap does.
	st, err := ImportPcap(context.Background(), bytes.NewReader(capture), redacting(sink), cfg)
	if err != nil {
		t.Fatalf("ImportPcap: %v", err)
	}
	return sink, st
}

func diffExchanges(t *testing.T, want, got []*snapshots.Exchange) {
	t.Helper()
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty(), cmpopts.EquateApproxTime(0)); diff != "" {
		t.Errorf("exchanges (-want +got):\n%s", diff)
	}
}

func TestImportPcapFormats(t *testing.T) {
	b, want := pcapScenario(t, "10.0.0.1:40000", "10.0.0.3:40001", "10.0.0.4:40002", "10.0.0.2:8080")
	tests := []pcapFormat{
		{name: "pcap ethernet", linkType: linkEthernet},
		{name: "pcap ethernet nanoseconds", linkType: linkEthernet, nanos: true},
		{name: "pcap big-endian", linkType: linkEthernet, bigEndian: true},
		{name: "pcap big-endian nanoseconds", linkType: linkEthernet, bigEndian: true, nanos: true},
		{name: "pcap gzip", linkType: linkEthernet, gzip: true},
		{name: "pcap ethernet vlan", linkType: linkEthernet | 1<<16},
		{name: "pcap linux cooked v1", linkType: linkLinuxSLL},
		{name: "pcap linux cooked v2", linkType: linkLinuxSLL2},
		{name: "pcap bsd loopback", linkType: linkNull},
		{name: "pcap bsd loopback big-endian host", linkType: linkNull | 1<<16},
		{name: "pcap openbsd loopback", linkType: linkLoop},
		{name: "pcap raw ip", linkType: linkRaw},
		{name: "pcap raw ipv4", linkType: linkIPv4},
		{name: "pcapng ethernet", linkType: linkEthernet, pcapng: true},
		{name: "pcapng gzip", linkType: linkEthernet, pcapng: true, gzip: true},
		{name: "pcapng linux cooked v2", linkType: linkLinuxSLL2, pcapng: true},
	}
	for _, f := range tests {
		t.Run(f.name, func(t *testing.T) {
			sink, st := importPcap(t, b.write(f), PcapConfig{})
			diffExchanges(t, want, sink.sorted())
			wantStats := PcapStats{
				Format: "pcap", Packets: int64(len(b.pkts)), TCPPackets: int64(len(b.pkts)),
				Connections: 3, Exchanges: 8, Incomplete: 2, Ports: []int{8080},
			}
			if f.pcapng {
				wantStats.Format = "pcapng"
			}
			if f.gzip {
				wantStats.Format += " (gzip)"
			}
			if diff := cmp.Diff(wantStats, st); diff != "" {
				t.Errorf("stats (-want +got):\n%s", diff)
			}
			if sink.seen != 8 {
				t.Errorf("CountSeen called %d times, want 8", sink.seen)
			}
		})
	}
}

func TestImportPcapIPv6(t *testing.T) {
	b, want := pcapScenario(t, "[fd00::1]:40000", "[fd00::3]:40001", "[fd00::4]:40002", "[fd00::2]:8080")
	for _, lt := range []uint32{linkEthernet, linkLinuxSLL2, linkNull, linkRaw} {
		t.Run(linkName(lt), func(t *testing.T) {
			sink, _ := importPcap(t, b.write(pcapFormat{linkType: lt}), PcapConfig{})
			diffExchanges(t, want, sink.sorted())
		})
	}
}
