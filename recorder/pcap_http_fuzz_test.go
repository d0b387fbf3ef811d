package recorder

import (
	"bytes"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/tcpassembly"
)

// feedStreams hands two byte streams of one TCP connection, client to
// server and server to client, to the HTTP reassembly of pcap import as the
// TCP assembler would, without packets. Each byte of schedule is one
// delivery: the top bit picks the direction (0: client), bit 6 marks a gap
// of lost bytes before it, and the low 6 bits plus one are how many bytes it
// carries; what the schedule leaves over follows in one piece per
// direction. With known set, the handshake told who the client is; else
// the first bytes must. It returns the connection.
func feedStreams(im *pcapImport, client, server, schedule []byte, known bool) *pcapConn {
	netFlow := gopacket.NewFlow(layers.EndpointIPv4, net.IPv4(10, 0, 0, 1).To4(), net.IPv4(10, 0, 0, 2).To4())
	tcpFlow := gopacket.NewFlow(layers.EndpointTCPPort, []byte{0x9c, 0x40}, []byte{0x1f, 0x90})
	im.cur = &layers.TCP{SYN: known}
	cli := im.New(netFlow, tcpFlow).(*pcapHalf)
	im.cur = &layers.TCP{SYN: known, ACK: known}
	srv := im.New(netFlow.Reverse(), tcpFlow.Reverse()).(*pcapHalf)
	halves, rest := [2]*pcapHalf{cli, srv}, [2][]byte{client, server}
	t := time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC)
	deliver := func(dir int, n, skip int) {
		n = min(n, len(rest[dir]))
		if n == 0 && skip == 0 {
			return
		}
		t = t.Add(time.Millisecond)
		halves[dir].Reassembled([]tcpassembly.Reassembly{{Bytes: rest[dir][:n], Skip: skip, Seen: t}})
		rest[dir] = rest[dir][n:]
	}
	for _, s := range schedule {
		skip := 0
		if s&0x40 != 0 {
			skip = int(s&0x3f) + 1
		}
		deliver(int(s>>7), int(s&0x3f)+1, skip)
	}
	deliver(0, len(rest[0]), 0)
	deliver(1, len(rest[1]), 0)
	for _, h := range halves {
		t = t.Add(time.Millisecond)
		h.Reassembled([]tcpassembly.Reassembly{{End: true, Seen: t}})
		h.ReassemblyComplete()
	}
	return cli.c
}

// FuzzPcapHTTP feeds two arbitrary byte streams, client to server and
// server to client, delivered in arbitrary pieces and interleavings, to the
// HTTP/1 reassembly of pcap import, past the packet decoding, so that the
// fuzzer spends its time on HTTP parsing. Exchanges must hold together:
// besides what FuzzImportPcap checks, every request seen is written once, in
// the order sent; a method, status and complete fixed-length body are what
// the streams carry; body bytes counted never exceed the bytes sent.
func FuzzPcapHTTP(f *testing.F) {
	for _, c := range []struct{ cli, srv string }{
		{"GET /a HTTP/1.1\r\nHost: h\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"},
		{"POST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhelloGET /c HTTP/1.1\r\n\r\n",
			"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nT: 1\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n"},
		{"PUT /d HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nwxyz\r\n0\r\n\r\nHEAD /e HTTP/1.1\r\n\r\n",
			"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n"},
		{"GET /f HTTP/1.0\r\n\r\n", "HTTP/1.0 200 OK\r\n\r\nuntil the connection closes"},
		{"GET /ws HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n\x81\x05hello", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n\x81\x02hi"},
		{"\r\nDELETE /g/1 HTTP/1.1\r\n\r\nGET /h HTTP/1.1\r\n\r\n", "HTTP/1.1 304 Not Modified\r\n\r\nHTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\nno!"},
		{"\x16\x03\x01\x00\x05hello", "\x16\x03\x03"},
		{"GET /i HTTP/2.0\r\n\r\n", "HTTP/2.0 200 OK\r\n\r\n"},
	} {
		f.Add([]byte(c.cli), []byte(c.srv), []byte{}, true)
		f.Add([]byte(c.cli), []byte(c.srv), []byte{0x03, 0x83, 0x45, 0x0f, 0xbf, 0x01, 0x81}, false)
	}
	const limit = 16
	f.Fuzz(func(t *testing.T, client, server, schedule []byte, known bool) {
		sink := &pcapSink{}
		im, err := newPcapImport(sink, PcapConfig{BodyLimit: limit})
		if err != nil {
			t.Fatal(err)
		}
		c := feedStreams(im, client, server, schedule, known)
		if c.client == 1 {
			// Unknown roles, and the server's stream starts with a request
			// line: it is the client.
			client, server = server, client
		}
		if len(im.conns) != 0 {
			t.Fatalf("the connection is not finished after both directions ended")
		}
		st := im.result()
		checkImported(t, sink, st, true, limit)
		if n := bytes.Count(client, []byte(" HTTP/1.")); len(sink.exchanges) > n {
			t.Fatalf("%d exchanges from a client stream with %d request lines", len(sink.exchanges), n)
		}
		if n := bytes.Count(server, []byte("HTTP/1.")); st.Exchanges-st.Incomplete > int64(n) {
			t.Fatalf("%d complete exchanges from a server stream with %d status lines", st.Exchanges-st.Incomplete, n)
		}
		var reqBytes, resBytes int64
		sorted := sink.sorted()
		for i, e := range sorted {
			if e.ID != int64(i+1) {
				t.Fatalf("exchange IDs %d…: a request was skipped or written twice", e.ID)
			}
			if i > 0 && e.Start.Before(sorted[i-1].Start) {
				t.Fatalf("exchange %d starts before the one sent before it", e.ID)
			}
			if !bytes.Contains(client, []byte(e.Method+" ")) {
				t.Fatalf("exchange %d: method %q is not in the client stream", e.ID, e.Method)
			}
			if e.Status != 0 && !bytes.Contains(server, []byte(" "+strconv.Itoa(e.Status))) {
				t.Fatalf("exchange %d: status %d is not in the server stream", e.ID, e.Status)
			}
			if e.Status != 0 && (e.Status < 100 || e.Status > 599 || e.Status < 200 && e.Status != 101) {
				t.Fatalf("exchange %d: status %d", e.ID, e.Status)
			}
			if cl := e.RequestHeader.Get("Content-Length"); cl != "" && e.Error == "" {
				n, _ := strconv.ParseInt(cl, 10, 64)
				if e.RequestBodySize != n || !bytes.Contains(client, e.RequestBody) {
					t.Fatalf("exchange %d: Content-Length %s, request body of %d bytes %q", e.ID, cl, e.RequestBodySize, e.RequestBody)
				}
			}
			reqBytes += e.RequestBodySize
			resBytes += e.ResponseBodySize
		}
		if reqBytes > int64(len(client)) || resBytes > int64(len(server)) {
			t.Fatalf("body bytes %d and %d from streams of %d and %d bytes", reqBytes, resBytes, len(client), len(server))
		}
	})
}
