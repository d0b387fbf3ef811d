package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/replaykit/replay/snapshots"
)

// testCapture writes a pcap file of keep-alive HTTP exchanges, one
// connection per server port in exchanges (port → request/response pairs),
// and returns its path.
func testCapture(t *testing.T, exchanges map[int][][2]string) string {
	t.Helper()
	var buf bytes.Buffer
	w := pcapgo.NewWriter(&buf)
	if err := w.WriteFileHeader(65536, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC)
	write := func(srcPort, dstPort int, seq, ack uint32, syn bool, payload string) {
		eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{0, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{0, 0, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv4}
		ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: net.IPv4(127, 0, 0, 1), DstIP: net.IPv4(127, 0, 0, 1)}
		tcp := &layers.TCP{SrcPort: layers.TCPPort(srcPort), DstPort: layers.TCPPort(dstPort), Seq: seq, Ack: ack, SYN: syn, ACK: !syn || ack != 0, PSH: payload != "", Window: 65535}
		tcp.SetNetworkLayerForChecksum(ip)
		b := gopacket.NewSerializeBuffer()
		if err := gopacket.SerializeLayers(b, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, tcp, gopacket.Payload(payload)); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Millisecond)
		if err := w.WritePacket(gopacket.CaptureInfo{Timestamp: now, CaptureLength: len(b.Bytes()), Length: len(b.Bytes())}, b.Bytes()); err != nil {
			t.Fatal(err)
		}
	}
	ports := make([]int, 0, len(exchanges))
	for p := range exchanges {
		ports = append(ports, p)
	}
	slices.Sort(ports)
	for i, port := range ports {
		client := 40000 + i
		cseq, sseq := uint32(100), uint32(9000)
		write(client, port, cseq-1, 0, true, "")
		write(port, client, sseq-1, cseq, true, "")
		for _, ex := range exchanges[port] {
			write(client, port, cseq, sseq, false, ex[0])
			cseq += uint32(len(ex[0]))
			write(port, client, sseq, cseq, false, ex[1])
			sseq += uint32(len(ex[1]))
		}
	}
	path := filepath.Join(t.TempDir(), "capture.pcap")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func ok(body string) string {
	return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}

func shopCapture(t *testing.T) string {
	return testCapture(t, map[int][][2]string{
		8080: {
			{"GET /orders/1 HTTP/1.1\r\nHost: shop:8080\r\nX-Api-Key: k\r\n\r\n", ok(`{"id":1}`)},
			{"GET /orders/2/status HTTP/1.1\r\nHost: shop:8080\r\n\r\n", ok(`{"status":"paid"}`)},
			{"POST /orders HTTP/1.1\r\nHost: shop:8080\r\nContent-Length: 14\r\n\r\n{\"item\":\"pen\"}", "HTTP/1.1 201 Created\r\nContent-Length: 8\r\n\r\n{\"id\":3}"},
		},
		9090: {
			{"GET /other HTTP/1.1\r\nHost: admin:9090\r\n\r\n", ok("{}")},
		},
	})
}

func TestRecordFromPcap(t *testing.T) {
	capture := shopCapture(t)
	tests := []struct {
		name     string
		args     []string
		rows     [][]string
		pcapLine string
	}{
		{
			name: "one port",
			args: []string{"--port", "8080", "--redact-header", "X-Api-Key", "--endpoint", "GET /orders/{id}/status", "--body-limit", "4"},
			rows: [][]string{
				{"inbound", "shop:8080", "GET", "/orders/{id}", "1"},
				{"inbound", "shop:8080", "GET", "/orders/{id}/status", "1"},
				{"inbound", "shop:8080", "POST", "/orders", "1"},
			},
			pcapLine: "pcap: 12 packets (pcap); 1 HTTP connection on port 8080",
		},
		{
			name: "every port",
			rows: [][]string{
				{"inbound", "admin:9090", "GET", "/other", "1"},
				{"inbound", "shop:8080", "GET", "/orders/{id}", "1"},
				{"inbound", "shop:8080", "GET", "/orders/{id}/status", "1"},
				{"inbound", "shop:8080", "POST", "/orders", "1"},
			},
			pcapLine: "pcap: 12 packets (pcap); 2 HTTP connections on port 8080, 9090",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := filepath.Join(t.TempDir(), "out.snap")
			var stdout, stderr bytes.Buffer
			args := append([]string{"record", "--from-pcap", capture, "--out", snap}, tt.args...)
			if code := run(args, streams{out: &stdout, err: &stderr}); code != 0 {
				t.Fatalf("exit %d; stderr: %s", code, stderr.String())
			}
			out := stdout.String()
			for _, row := range tt.rows {
				if !hasRow(out, row...) {
					t.Errorf("no row %q in:\n%s", row, out)
				}
			}
			if !strings.Contains(out, tt.pcapLine+"\n") {
				t.Errorf("no line %q in:\n%s", tt.pcapLine, out)
			}
			if stderr.Len() > 0 {
				t.Errorf("stderr: %s", stderr.String())
			}
			exchanges := readSnapshot(t, snap)
			want := 3
			if tt.args == nil {
				want = 4
			}
			if len(exchanges) != want {
				t.Fatalf("snapshot holds %d exchanges, want %d", len(exchanges), want)
			}
			if tt.args != nil {
				e := exchanges[0]
				if e.Direction != snapshots.Inbound || e.URL != "http://shop:8080/orders/1" || e.Status != 200 ||
					e.RequestHeader.Get("X-Api-Key") != "[REDACTED]" || string(e.ResponseBody) != `{"id` || e.ResponseBodySize != 8 {
					t.Errorf("first exchange = %+v", e)
				}
			}
		})
	}
}

func TestRecordFromPcapUsageErrors(t *testing.T) {
	capture := shopCapture(t)
	out := filepath.Join(t.TempDir(), "x.snap")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"with inbound", []string{"--from-pcap", capture, "--out", out, "--inbound", ":0=http://127.0.0.1:1"}, "--inbound records live traffic and cannot be combined with --from-pcap"},
		{"with outbound", []string{"--from-pcap", capture, "--out", out, "--outbound", "127.0.0.1:0"}, "--outbound records live traffic"},
		{"with postgres", []string{"--from-pcap", capture, "--out", out, "--postgres", "127.0.0.1:0=127.0.0.1:5432"}, "--postgres records live traffic"},
		{"with ca-dir", []string{"--from-pcap", capture, "--out", out, "--ca-dir", t.TempDir()}, "--ca-dir records live traffic"},
		{"no out", []string{"--from-pcap", capture}, "--out SNAP is required"},
		{"port without pcap", []string{"--out", out, "--inbound", ":0=http://127.0.0.1:1", "--port", "8080"}, "--port applies to --from-pcap"},
		{"port zero", []string{"--from-pcap", capture, "--out", out, "--port", "0"}, "--port 0: want a TCP port, 1 to 65535"},
		{"port too big", []string{"--from-pcap", capture, "--out", out, "--port", "70000"}, "--port 70000"},
		{"port not a number", []string{"--from-pcap", capture, "--out", out, "--port", "http"}, `invalid argument "http" for "--port"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"record"}, tt.args...), streams{out: &stdout, err: &stderr})
			if code != exitUsage || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, stderr.String(), tt.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("a usage error left %s", out)
			}
		})
	}
}

func TestRecordFromPcapBadFiles(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile(shopCapture(t))
	if err != nil {
		t.Fatal(err)
	}
	file := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	existing := file("existing.snap", []byte("x"))
	tests := []struct {
		name, capture, out, want string
	}{
		{"not a capture", file("notes.txt", []byte("some notes, not packets\n")), "", "not a pcap or pcapng file (it starts with 73 6f 6d 65)"},
		{"truncated", file("cut.pcap", good[:len(good)-10]), "", "the capture is truncated: packet 12 is cut short"},
		{"empty", file("empty.pcap", nil), "", "not a pcap or pcapng file: it is empty"},
		{"missing", filepath.Join(dir, "missing.pcap"), "", "missing.pcap: no such file or directory"},
		{"out exists", file("good.pcap", good), existing, "already exists"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := tt.out
			if out == "" {
				out = filepath.Join(t.TempDir(), "out.snap")
			}
			var stdout, stderr bytes.Buffer
			code := run([]string{"record", "--from-pcap", tt.capture, "--out", out}, streams{out: &stdout, err: &stderr})
			msg := stderr.String()
			if code != exitError || !strings.Contains(msg, tt.want) || strings.Count(msg, "\n") != 1 || !strings.HasPrefix(msg, "replay: record: ") {
				t.Errorf("exit %d, stderr %q; want exit 1 and one line with %q", code, msg, tt.want)
			}
			if tt.out != "" {
				return
			}
			left, _ := filepath.Glob(out + "*")
			if len(left) > 0 {
				t.Errorf("a failed import left %v", left)
			}
		})
	}
}

// TestRecordFromPcapRedacts: a capture's secrets (query, JSON and form
// bodies, headers) are redacted on import unless --no-redact.
func TestRecordFromPcapRedacts(t *testing.T) {
	form := "client_secret=pc-cs-5ec&grant=visible-grant"
	capture := testCapture(t, map[int][][2]string{8080: {
		{"GET /a?token=pc-tok-5ec&page=visible-page HTTP/1.1\r\nHost: shop:8080\r\nAuthorization: Bearer pc-auth-5ec\r\n\r\n", ok(`{"password":"pc-pw-5ec","name":"visible-name"}`)},
		{fmt.Sprintf("POST /b HTTP/1.1\r\nHost: shop:8080\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\n%s", len(form), form), ok(`{}`)},
	}})
	secrets := []string{"pc-tok-5ec", "pc-auth-5ec", "pc-pw-5ec", "pc-cs-5ec"}
	for _, off := range []bool{false, true} {
		snap := filepath.Join(t.TempDir(), "out.snap")
		var stdout, stderr bytes.Buffer
		args := []string{"record", "--from-pcap", capture, "--out", snap}
		if off {
			args = append(args, "--no-redact")
		}
		if code := run(args, streams{out: &stdout, err: &stderr}); code != 0 {
			t.Fatalf("exit %d; stderr: %s", code, stderr.String())
		}
		raw, err := os.ReadFile(snap)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range secrets {
			if strings.Contains(string(raw), s) != off {
				t.Errorf("no-redact %v: the snapshot holds %q: %v", off, s, off == false)
			}
		}
		for _, s := range []string{"visible-grant", "visible-page", "visible-name"} {
			if !strings.Contains(string(raw), s) {
				t.Errorf("the snapshot lost %q", s)
			}
		}
		if warned := strings.Contains(stderr.String(), "warning: --no-redact"); warned != off {
			t.Errorf("no-redact %v: stderr %q", off, stderr.String())
		}
	}
}
