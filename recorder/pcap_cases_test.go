package recorder

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaykit/replay/snapshots"
)

// simpleExchange captures one keep-alive GET on c and returns its path.
func simpleExchange(c *pcapConv, path, body string) {
	c.client("GET " + path + " HTTP/1.1\r\nHost: h\r\n\r\n")
	c.server(fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body))
}

func urls(es []*snapshots.Exchange) []string {
	var out []string
	for _, e := range es {
		s := e.Method + " " + e.URL
		if e.Error != "" {
			s += " (" + e.Error + ")"
		}
		out = append(out, s)
	}
	return out
}

func TestImportPcapPorts(t *testing.T) {
	b := newPcapBuilder(t)
	c1 := b.conv("10.0.0.1:5000", "10.0.0.2:8080")
	c1.handshake()
	simpleExchange(c1, "/a", "A")
	c2 := b.conv("10.0.0.1:5001", "10.0.0.2:9090")
	c2.handshake()
	simpleExchange(c2, "/b", "B")
	tls := b.conv("10.0.0.1:5002", "10.0.0.2:8443")
	tls.handshake()
	tls.client("\x16\x03\x01\x00\x05hello")
	tls.server("\x16\x03\x03\x00\x02hi")
	pg := b.conv("10.0.0.1:5003", "10.0.0.2:5432")
	pg.handshake()
	pg.client("\x00\x00\x00\x08\x04\xd2\x16\x2f")
	pg.server("N")
	// A connection already open when the capture began: no SYN.
	mid := b.conv("10.0.0.1:5004", "10.0.0.2:9090")
	simpleExchange(mid, "/c", "C")
	capture := b.write(pcapFormat{linkType: linkEthernet})

	tests := []struct {
		name    string
		ports   []int
		want    []string
		packets int64
		stats   PcapStats
	}{
		{"guess", nil, []string{"GET http://h/a", "GET http://h/b", "GET http://h/c"}, 22,
			PcapStats{Connections: 3, Exchanges: 3, TLSConnections: 1, Ports: []int{8080, 9090}}},
		{"one port", []int{8080}, []string{"GET http://h/a"}, 5,
			PcapStats{Connections: 1, Exchanges: 1, Ports: []int{8080}}},
		{"two ports", []int{9090, 8080}, []string{"GET http://h/a", "GET http://h/b", "GET http://h/c"}, 12,
			PcapStats{Connections: 3, Exchanges: 3, Ports: []int{8080, 9090}}},
		{"tls port", []int{8443}, nil, 5, PcapStats{TLSConnections: 1}},
		{"not http", []int{5432}, nil, 5, PcapStats{OtherConnections: 1}},
		{"no traffic", []int{80}, nil, 0, PcapStats{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sink, st := importPcap(t, capture, PcapConfig{Ports: tt.ports})
			if diff := cmp.Diff(tt.want, urls(sink.sorted())); diff != "" {
				t.Errorf("exchanges (-want +got):\n%s", diff)
			}
			tt.stats.Format, tt.stats.Packets, tt.stats.TCPPackets = "pcap", 22, tt.packets
			if diff := cmp.Diff(tt.stats, st); diff != "" {
				t.Errorf("stats (-want +got):\n%s", diff)
			}
		})
	}
	for _, p := range []int{0, -1, 65536} {
		_, err := ImportPcap(context.Background(), bytes.NewReader(capture), &pcapSink{}, PcapConfig{Ports: []int{p}})
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("port %d", p)) {
			t.Errorf("port %d: err = %v, want one naming the port", p, err)
		}
	}
}

func TestImportPcapMidConnection(t *testing.T) {
	b := newPcapBuilder(t)
	c := b.conv("10.0.0.1:5000", "10.0.0.2:8080")
	// The capture starts inside a response, then has a whole one to a
	// request it did not see, then a whole exchange.
	c.server("tail of a body\"}", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	simpleExchange(c, "/x", "X")
	c.fin(true)
	c.fin(false)
	sink, st := importPcap(t, b.write(pcapFormat{linkType: linkEthernet}), PcapConfig{})
	if diff := cmp.Diff([]string{"GET http://h/x"}, urls(sink.sorted())); diff != "" {
		t.Errorf("exchanges (-want +got):\n%s", diff)
	}
	if st.OrphanResponses != 1 || st.Connections != 1 {
		t.Errorf("stats = %+v, want 1 orphan response and 1 connection", st)
	}
	if e := sink.exchanges[0]; string(e.ResponseBody) != "X" || e.Status != 200 {
		t.Errorf("exchange = %d %q, want 200 \"X\"", e.Status, e.ResponseBody)
	}
}

func TestImportPcapLostSegment(t *testing.T) {
	b := newPcapBuilder(t)
	c := b.conv("10.0.0.1:5000", "10.0.0.2:8080")
	c.handshake()
	c.client("GET /one HTTP/1.1\r\nHost: h\r\n\r\n")
	c.server("HTTP/1.1 200 OK\r\nContent-Length: 30\r\n\r\n0123456789")
	c.seg(false, "abcdefghij") // never captured
	c.server("ABCDEFGHIJ")
	simpleExchange(c, "/two", "2")
	c.fin(true)
	c.fin(false)
	sink, st := importPcap(t, b.write(pcapFormat{linkType: linkEthernet}), PcapConfig{})
	want := []string{"GET http://h/one (response cut short: the capture lost 10 bytes of it)", "GET http://h/two"}
	if diff := cmp.Diff(want, urls(sink.sorted())); diff != "" {
		t.Errorf("exchanges (-want +got):\n%s", diff)
	}
	if e := sink.sorted()[0]; e.Status != 200 || string(e.ResponseBody) != "0123456789" {
		t.Errorf("cut exchange = %d %q, want 200 and the bytes before the gap", e.Status, e.ResponseBody)
	}
	if st.Gaps != 1 || st.Incomplete != 1 {
		t.Errorf("stats = %+v, want 1 gap and 1 incomplete exchange", st)
	}
}

func TestImportPcapLostResponse(t *testing.T) {
	b := newPcapBuilder(t)
	c := b.conv("10.0.0.1:5000", "10.0.0.2:8080")
	c.handshake()
	c.client("GET /one HTTP/1.1\r\nHost: h\r\n\r\n")
	c.seg(false, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none") // never captured
	simpleExchange(c, "/two", "two")
	simpleExchange(c, "/three", "three")
	c.fin(true)
	c.fin(false)
	sink, _ := importPcap(t, b.write(pcapFormat{linkType: linkEthernet}), PcapConfig{})
	want := []string{"GET http://h/one (no response in the capture: the packets were lost)", "GET http://h/two", "GET http://h/three"}
	if diff := cmp.Diff(want, urls(sink.sorted())); diff != "" {
		t.Errorf("exchanges (-want +got):\n%s", diff)
	}
	for _, e := range sink.sorted()[1:] {
		if e.URL != "http://h/"+string(e.ResponseBody) {
			t.Errorf("%s paired with response %q", e.URL, e.ResponseBody)
		}
	}
}

func TestImportPcapUpgrade(t *testing.T) {
	b := newPcapBuilder(t)
	c := b.conv("10.0.0.1:5000", "10.0.0.2:8080")
	c.handshake()
	c.client("GET /ws HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
	c.server("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n\x81\x02hi")
	c.client("\x81\x82abcdGET / HTTP/1.1\r\n\r\n")
	c.server("\x81\x02yo")
	c.fin(true)
	c.fin(false)
	sink, st := importPcap(t, b.write(pcapFormat{linkType: linkEthernet}), PcapConfig{})
	if diff := cmp.Diff([]string{"GET http://h/ws"}, urls(sink.sorted())); diff != "" {
		t.Errorf("exchanges (-want +got):\n%s", diff)
	}
	if sink.exchanges[0].Status != 101 || st.Incomplete != 0 || st.OrphanResponses != 0 {
		t.Errorf("status %d, stats %+v: want 101 and nothing else", sink.exchanges[0].Status, st)
	}
}

func TestImportPcapBodyLimitAndRedaction(t *testing.T) {
	b := newPcapBuilder(t)
	c := b.conv("10.0.0.1:5000", "10.0.0.2:8080")
	c.handshake()
	c.client("POST /orders HTTP/1.1\r\nHost: h\r\nX-Api-Key: k\r\nCookie: c=1\r\nTransfer-Encoding: chunked\r\n\r\n",
		"17\r\n{\"item\":\"book\",\"qty\":2}\r\n0\r\nX-Trailer: t\r\n\r\n")
	c.server("HTTP/1.1 200 OK\r\nContent-Length: 18\r\n\r\n{\"id\":1,\"ok\":true}")
	capture := b.write(pcapFormat{linkType: linkEthernet})
	tests := []struct {
		limit         int64
		wantReq, want string
	}{
		{0, `{"item":"book","qty":2}`, `{"id":1,"ok":true}`},
		{10, `{"item":"b`, `{"id":1,"o`},
		{-1, "", ""},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.limit), func(t *testing.T) {
			sink := &pcapSink{}
			if _, err := ImportPcap(context.Background(), bytes.NewReader(capture), redacting(sink, "x-api-key"), PcapConfig{BodyLimit: tt.limit}); err != nil {
				t.Fatal(err)
			}
			e := sink.exchanges[0]
			if string(e.RequestBody) != tt.wantReq || e.RequestBodySize != 23 || string(e.ResponseBody) != tt.want || e.ResponseBodySize != 18 {
				t.Errorf("bodies %q (%d bytes), %q (%d bytes); want %q (23), %q (18)",
					e.RequestBody, e.RequestBodySize, e.ResponseBody, e.ResponseBodySize, tt.wantReq, tt.want)
			}
			want := http.Header{"X-Api-Key": {Redacted}, "Cookie": {Redacted}}
			if diff := cmp.Diff(want, e.RequestHeader); diff != "" {
				t.Errorf("request header (-want +got):\n%s", diff)
			}
		})
	}
}

// positionReader counts the bytes read from it.
type positionReader struct {
	r   io.Reader
	pos int
}

func (p *positionReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.pos += n
	return n, err
}

// positionSink notes how far the capture had been read when each exchange
// was written.
type positionSink struct {
	pcapSink
	r  *positionReader
	at map[string]int
}

func (s *positionSink) AddExchange(e *snapshots.Exchange) {
	s.at[e.URL] = s.r.pos
	s.pcapSink.AddExchange(e)
}

func TestImportPcapFlushesIdleConnections(t *testing.T) {
	b := newPcapBuilder(t)
	idle := b.conv("10.0.0.1:5000", "10.0.0.2:8080")
	idle.handshake()
	idle.client("GET /idle HTTP/1.1\r\nHost: h\r\n\r\n")
	// Ten minutes of traffic on other connections follow, none of them
	// closed either.
	body := strings.Repeat("x", 2000)
	for i := range 120 {
		b.wait(5 * time.Second)
		c := b.conv(fmt.Sprintf("10.0.1.%d:6000", i%250+1), "10.0.0.2:8080")
		c.handshake()
		simpleExchange(c, fmt.Sprintf("/busy/%d", i), body)
	}
	capture := b.write(pcapFormat{linkType: linkEthernet})
	pr := &positionReader{r: bytes.NewReader(capture)}
	sink := &positionSink{r: pr, at: map[string]int{}}
	st, err := ImportPcap(context.Background(), pr, sink, PcapConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Exchanges != 121 {
		t.Fatalf("exchanges = %d, want 121", st.Exchanges)
	}
	e := sink.sorted()[0]
	if e.URL != "http://h/idle" || e.Error != "no response in the capture" {
		t.Fatalf("first exchange = %s %q, want /idle without a response", e.URL, e.Error)
	}
	// The idle connection is written once it has been silent for two
	// minutes of capture time, long before the capture ends.
	if at := sink.at["http://h/idle"]; at > len(capture)/2 {
		t.Errorf("/idle written after reading %d of %d bytes: idle connections are not flushed", at, len(capture))
	}
	if at := sink.at["http://h/busy/10"]; at > len(capture)/2 {
		t.Errorf("/busy/10 written after reading %d of %d bytes: idle connections are not flushed", at, len(capture))
	}
}

func TestImportPcapBadFiles(t *testing.T) {
	b := newPcapBuilder(t)
	c := b.conv("10.0.0.1:5000", "10.0.0.2:8080")
	c.handshake()
	simpleExchange(c, "/a", "hello")
	classic := b.write(pcapFormat{linkType: linkEthernet})
	ng := b.write(pcapFormat{linkType: linkEthernet, pcapng: true})
	ngSLL2 := b.write(pcapFormat{linkType: linkLinuxSLL2, pcapng: true})

	wifi := bytes.Clone(classic)
	wifi[20] = 105 // the link type
	oversized := bytes.Clone(classic)
	copy(oversized[24+8:], []byte{0, 0, 0, 0x40}) // the first record's captured length: 1 GiB
	ngWifi := bytes.Clone(ngSLL2)
	ngWifi[28+8], ngWifi[28+9] = 127, 0 // the interface's link type: 127, radiotap
	ngBadLen := bytes.Clone(ngSLL2)
	ngBadLen[28+4] = 13 // the interface block's length
	ngTSResol := bytes.Clone(ngSLL2)
	ngTSResol[28+8+8+4] = 0x80 | 64 // if_tsresol 2^-64: pcapgo divides by zero
	ngBadVersion := bytes.Clone(ngSLL2)
	ngBadVersion[12] = 2

	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "not a pcap or pcapng file: it is empty"},
		{"short", []byte{0xd4, 0xc3}, "it has only 2 bytes"},
		{"html", []byte("<html><body>hi</body></html>"), "not a pcap or pcapng file (it starts with 3c 68 74 6d)"},
		{"gzip of text", gzipped(t, "hello, world"), "not a pcap or pcapng file (it starts with 68 65 6c 6c)"},
		{"bad gzip", []byte{0x1f, 0x8b, 0, 0}, "gzipped capture"},
		{"pcap header cut", classic[:10], "pcap file header: truncated after 10 bytes"},
		{"pcap cut in a record header", classic[:24+8], "the capture is truncated: packet 1 is cut short"},
		{"pcap cut in a packet", classic[:len(classic)-3], "the capture is truncated: packet 5 is cut short"},
		{"pcap unsupported link type", wifi, "link type 105 (IEEE 802.11) is not supported"},
		{"pcap oversized record", oversized, "packet 1: capture length exceeds snap length: 1073741824 > 262144 (the capture is corrupt)"},
		{"pcapng cut", ng[:len(ng)-3], "the capture is truncated after packet 4"},
		{"pcapng unsupported link type", ngWifi, "pcapng interface 0: link type 127 (802.11 radiotap) is not supported"},
		{"pcapng bad block length", ngBadLen, "bad length 13"},
		{"pcapng timestamp resolution", ngTSResol, "timestamp resolution 2^-64 is not supported"},
		{"pcapng version", ngBadVersion, "version 2.0 is not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ImportPcap(context.Background(), bytes.NewReader(tt.data), &pcapSink{}, PcapConfig{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "import pcap: ") || strings.Contains(err.Error(), "\n") {
				t.Errorf("err = %q, want one line starting with \"import pcap: \"", err)
			}
		})
	}
	t.Run("canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := ImportPcap(ctx, bytes.NewReader(classic), &pcapSink{}, PcapConfig{})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	})
	t.Run("no sink", func(t *testing.T) {
		if _, err := ImportPcap(context.Background(), bytes.NewReader(classic), nil, PcapConfig{}); err == nil {
			t.Fatal("no error without a sink")
		}
	})
}

// parserLog is a msgHandler that keeps what a msgParser reads.
type parserLog struct {
	msgs []*httpMsg
	errs []string
}

func (l *parserLog) started(*msgParser, *httpMsg) {}
func (l *parserLog) ended(_ *msgParser, m *httpMsg) {
	l.msgs = append(l.msgs, m)
}
func (l *parserLog) answering() *http.Request           { return nil }
func (l *parserLog) unparsable(_ *msgParser, err error) { l.errs = append(l.errs, err.Error()) }
func (l *parserLog) upgraded()                          {}

// TestMsgParserSplits feeds streams in pieces of every size: what is read
// must not depend on where the packets split them.
func TestMsgParserSplits(t *testing.T) {
	requests := "\r\nGET /a HTTP/1.1\r\nHost: h\r\n\r\n" +
		"POST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello" +
		"POST /c HTTP/1.1\nHost: h\nTransfer-Encoding: chunked\n\n3;ext=1\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\nT: x\r\n\r\n" +
		"GET /d HTTP/1.0\r\n\r\n"
	responses := "HTTP/1.1 100 Continue\r\n\r\n" +
		"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc" +
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n" +
		"HTTP/1.1 304 Not Modified\r\n\r\n" +
		"HTTP/1.0 200 OK\r\n\r\nuntil the end"
	type read struct {
		Target, Body string
		Status       int
		Err          string
	}
	parse := func(stream string, response bool, piece int) []read {
		log := &parserLog{}
		p := &msgParser{response: response, limit: 1 << 20, h: log}
		for i := 0; i < len(stream); i += piece {
			p.feed([]byte(stream[i:min(i+piece, len(stream))]), time.Unix(int64(i), 0))
		}
		p.end(true)
		var out []read
		for _, m := range log.msgs {
			r := read{Body: string(m.body), Err: m.err}
			if m.req != nil {
				r.Target = m.req.Method + " " + m.req.RequestURI
			} else {
				r.Status = m.res.StatusCode
			}
			out = append(out, r)
		}
		if len(log.errs) > 0 {
			t.Errorf("piece %d: unparsable: %v", piece, log.errs)
		}
		return out
	}
	wantReqs := []read{{Target: "GET /a"}, {Target: "POST /b", Body: "hello"}, {Target: "POST /c", Body: "abc0123456789abcdef"}, {Target: "GET /d"}}
	wantRes := []read{{Status: 200, Body: "abc"}, {Status: 200, Body: "hi"}, {Status: 304}, {Status: 200, Body: "until the end"}}
	for piece := 1; piece <= len(requests); piece++ {
		if diff := cmp.Diff(wantReqs, parse(requests, false, piece)); diff != "" {
			t.Fatalf("requests in pieces of %d (-want +got):\n%s", piece, diff)
		}
	}
	for piece := 1; piece <= len(responses); piece++ {
		if diff := cmp.Diff(wantRes, parse(responses, true, piece)); diff != "" {
			t.Fatalf("responses in pieces of %d (-want +got):\n%s", piece, diff)
		}
	}
}

// TestImportPcapOneDirection imports a capture that saw only what the
// client sent (asymmetric routing): every request is recorded, without a
// response, and the connection does not keep them all until it ends.
func TestImportPcapOneDirection(t *testing.T) {
	b := newPcapBuilder(t)
	c := b.conv("10.0.0.1:5000", "10.0.0.2:8080")
	b.add(c.packet(true, "S", c.cliSeq-1, 0, nil))
	pad := strings.Repeat("p", 1000)
	for i := range 400 {
		c.client(fmt.Sprintf("GET /orders/%d HTTP/1.1\r\nHost: h\r\nX-Pad: %s\r\n\r\n", i, pad))
	}
	capture := b.write(pcapFormat{linkType: linkEthernet})
	pr := &positionReader{r: bytes.NewReader(capture)}
	sink := &positionSink{r: pr, at: map[string]int{}}
	st, err := ImportPcap(context.Background(), pr, sink, PcapConfig{})
	if err != nil {
		t.Fatal(err)
	}
	es := sink.sorted()
	if len(es) != 400 || st.Incomplete != 400 {
		t.Fatalf("%d exchanges, %d incomplete; want 400 and 400", len(es), st.Incomplete)
	}
	for i, e := range es {
		if e.URL != fmt.Sprintf("http://h/orders/%d", i) || e.Error != "no response in the capture" {
			t.Fatalf("exchange %d = %s %q", i, e.URL, e.Error)
		}
	}
	if at := sink.at["http://h/orders/0"]; at > len(capture)/2 {
		t.Errorf("/orders/0 written after reading %d of %d bytes: unanswered requests pile up", at, len(capture))
	}
}

func TestImportPcapSnaplen(t *testing.T) {
	b, _ := pcapScenario(t, "10.0.0.1:40000", "10.0.0.3:40001", "10.0.0.4:40002", "10.0.0.2:8080")
	var long int64
	for _, p := range b.pkts {
		if len(pcapFrame(linkEthernet, p.ip)) > 96 {
			long++
		}
	}
	_, st := importPcap(t, b.write(pcapFormat{linkType: linkEthernet, snaplen: 96}), PcapConfig{})
	if st.CutPackets != long || st.Gaps == 0 {
		t.Errorf("stats = %+v, want %d cut packets and gaps", st, long)
	}
}
