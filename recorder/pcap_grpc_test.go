package recorder

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/replaykit/replay/internal/grpctest"
)

// TestImportPcapGRPC captures grpc-go's interop client calling its server
// over h2c with tcpdump on lo, imports the capture, and checks it against
// the server's own count: each call it saw, with its status and messages.
// Then it drops a packet of the capture's middle: the import counts the
// gap and the HTTP/2 connection whose decoding stopped at it, and writes
// the streams in flight with an error.
func TestImportPcapGRPC(t *testing.T) {
	tcpdump, err := exec.LookPath("tcpdump")
	if err != nil {
		t.Skip("tcpdump is not installed (apt-get install tcpdump); skipping the real-capture test")
	}
	srv := grpctest.Start(t, nil)
	_, portText, _ := net.SplitHostPort(srv.Addr)
	port, _ := strconv.Atoi(portText)
	file := filepath.Join(t.TempDir(), "grpc.pcap")
	stop := startTcpdump(t, tcpdump, "lo", port, file)
	cc, err := grpc.NewClient(srv.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range grpctest.Cases {
		c.Run(ctx, cc)
	}
	calls := srv.SettledCalls()
	var data []byte
	deadline := time.Now().Add(60 * time.Second)
	for {
		// tcpdump writes each packet a little after it is sent.
		data, _ = os.ReadFile(file)
		sink := &pcapSink{}
		ImportPcap(context.Background(), bytes.NewReader(data), sink, PcapConfig{Ports: []int{port}})
		if len(sink.exchanges) >= len(calls)+1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	cc.Close()
	time.Sleep(100 * time.Millisecond)
	stop()
	data, err = os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	sink, st := importPcap(t, data, PcapConfig{Ports: []int{port}})
	if st.HTTP2Connections != 1 || st.Connections != 1 || st.HTTP2Broken != 0 || st.Gaps != 0 {
		t.Errorf("stats %+v: want one h2c connection, whole", st)
	}
	checkGRPCRecording(t, calls, sink.sorted())
	for _, e := range sink.exchanges {
		if e.Proto != "HTTP/2.0" || e.Transport() != "h2c" || e.Service != srv.Addr {
			t.Errorf("exchange %d: %s %s %s", e.ID, e.Proto, e.Transport(), e.Service)
		}
	}

	whole := st
	cut := dropPacket(t, data, 0.5)
	sink, st = importPcap(t, cut, PcapConfig{Ports: []int{port}})
	if st.Gaps == 0 || st.HTTP2Broken != 1 || st.Exchanges-st.Incomplete >= whole.Exchanges-whole.Incomplete {
		t.Errorf("with a packet lost: stats %+v (whole: %+v): want the gap counted and fewer complete exchanges", st, whole)
	}
	if int(st.Exchanges) > len(calls)+1 || st.Exchanges != int64(len(sink.exchanges)) {
		t.Errorf("with a packet lost: %d exchanges, %d written", st.Exchanges, len(sink.exchanges))
	}
}

// dropPacket removes the data packet at fraction f of a classic pcap
// file's packets that carry TCP payload.
func dropPacket(t *testing.T, data []byte, f float64) []byte {
	t.Helper()
	type rec struct{ off, end int }
	var recs []rec
	for off := 24; off+16 <= len(data); {
		n := int(binary.LittleEndian.Uint32(data[off+8 : off+12]))
		end := off + 16 + n
		if end > len(data) {
			break
		}
		// Ethernet (14) + IPv4 (20, no options on lo) + TCP (data offset).
		if n > 14+20+20 {
			tcp := data[off+16+14+20:]
			if len(tcp) > 12 && n > 14+20+int(tcp[12]>>4)*4 {
				recs = append(recs, rec{off, end})
			}
		}
		off = end
	}
	if len(recs) < 4 {
		t.Fatalf("%d data packets in the capture", len(recs))
	}
	r := recs[int(float64(len(recs))*f)]
	return append(append([]byte(nil), data[:r.off]...), data[r.end:]...)
}
