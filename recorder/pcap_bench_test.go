package recorder

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/replaykit/replay/snapshots"
)

// discardPcapSink counts exchanges and keeps nothing.
type discardPcapSink struct{ n, ids int64 }

func (s *discardPcapSink) NewID() int64                    { s.ids++; return s.ids }
func (s *discardPcapSink) AddExchange(*snapshots.Exchange) { s.n++ }
func (s *discardPcapSink) CountSeen(snapshots.Direction)   {}

// writeTraffic writes to w a capture of conns connections, open 50 at a
// time, each carrying perConn keep-alive exchanges whose responses have
// bodies of bodySize bytes sent in 1448-byte segments. It streams: nothing
// but the 50 open connections is held in memory.
func writeTraffic(tb testing.TB, w io.Writer, conns, perConn, bodySize int) error {
	pw := pcapgo.NewWriterNanos(w)
	err := pw.WriteFileHeader(262144, layers.LinkTypeEthernet)
	b := newPcapBuilder(tb)
	now := b.now
	emit := func(ip []byte) {
		now = now.Add(100 * time.Microsecond)
		d := pcapFrame(linkEthernet, ip)
		if err == nil {
			err = pw.WritePacket(gopacket.CaptureInfo{Timestamp: now, CaptureLength: len(d), Length: len(d)}, d)
		}
	}
	body := strings.Repeat("x", bodySize)
	const group = 50
	for first := 0; first < conns; first += group {
		var cs []*pcapConv
		for i := first; i < min(first+group, conns); i++ {
			c := b.conv(fmt.Sprintf("10.%d.%d.%d:%d", i>>16&255, i>>8&255, i&255, 30000+i%30000), "10.255.0.1:8080")
			cs = append(cs, c)
			emit(c.packet(true, "S", c.cliSeq-1, 0, nil))
			emit(c.packet(false, "SA", c.srvSeq-1, c.cliSeq, nil))
		}
		for k := range perConn {
			for _, c := range cs {
				emit(c.seg(true, fmt.Sprintf("GET /orders/%d HTTP/1.1\r\nHost: shop:8080\r\nUser-Agent: bench\r\n\r\n", k)))
				resp := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body)) + body
				for len(resp) > 0 {
					n := min(len(resp), 1448)
					emit(c.seg(false, resp[:n]))
					resp = resp[n:]
				}
				emit(c.packet(true, "A", c.cliSeq, c.srvSeq, nil))
			}
		}
		for _, c := range cs {
			emit(c.packet(true, "FA", c.cliSeq, c.srvSeq, nil))
			emit(c.packet(false, "FA", c.srvSeq, c.cliSeq+1, nil))
		}
	}
	return err
}

// BenchmarkImportPcap measures the import of an in-memory capture: 200
// connections of 5 exchanges with 4 KB responses.
func BenchmarkImportPcap(b *testing.B) {
	var buf bytes.Buffer
	if err := writeTraffic(b, &buf, 200, 5, 4096); err != nil {
		b.Fatal(err)
	}
	capture := buf.Bytes()
	b.SetBytes(int64(len(capture)))
	b.ReportAllocs()
	var exchanges int64
	for b.Loop() {
		sink := &discardPcapSink{}
		if _, err := ImportPcap(context.Background(), bytes.NewReader(capture), sink, PcapConfig{}); err != nil {
			b.Fatal(err)
		}
		exchanges += sink.n
	}
	b.ReportMetric(float64(exchanges)/b.Elapsed().Seconds(), "exchanges/s")
}

// BenchmarkImportPcapMemory streams captures of growing size into the
// import and reports the peak heap in use: it must not grow with the
// capture. Run it with -benchtime=1x.
func BenchmarkImportPcapMemory(b *testing.B) {
	for _, conns := range []int{1000, 4000} {
		b.Run(fmt.Sprintf("conns=%d", conns), func(b *testing.B) {
			for b.Loop() {
				pr, pw := io.Pipe()
				counter := &positionReader{r: pr}
				go func() { pw.CloseWithError(writeTraffic(b, pw, conns, 5, 8192)) }()
				var (
					peak uint64
					mu   sync.Mutex
					stop = make(chan struct{})
					done = make(chan struct{})
				)
				go func() {
					defer close(done)
					var ms runtime.MemStats
					for {
						select {
						case <-stop:
							return
						case <-time.After(20 * time.Millisecond):
						}
						runtime.ReadMemStats(&ms)
						mu.Lock()
						peak = max(peak, ms.HeapInuse)
						mu.Unlock()
					}
				}()
				sink := &discardPcapSink{}
				if _, err := ImportPcap(context.Background(), counter, sink, PcapConfig{}); err != nil {
					b.Fatal(err)
				}
				close(stop)
				<-done
				b.ReportMetric(float64(counter.pos)/1e6, "capture-MB")
				b.ReportMetric(float64(peak)/1e6, "peak-heap-MB")
				b.ReportMetric(float64(sink.n), "exchanges")
			}
		})
	}
}
