package recorder

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/replaykit/replay/snapshots"
)

// FuzzImportPcap feeds arbitrary bytes to ImportPcap: it must return an
// error or exchanges that hold together, and never panic (a panic inside
// gopacket comes back as an "internal error", which fails too). The seed
// corpus is under testdata/fuzz/FuzzImportPcap: synthetic captures in every
// format and link type, and small real ones from tcpdump.
func FuzzImportPcap(f *testing.F) {
	b, _ := pcapScenario(f, "10.0.0.1:40000", "10.0.0.3:40001", "10.0.0.4:40002", "10.0.0.2:8080")
	for _, pf := range []pcapFormat{
		{linkType: linkEthernet},
		{linkType: linkLinuxSLL2, pcapng: true},
		{linkType: linkNull, nanos: true, bigEndian: true},
	} {
		f.Add(b.write(pf))
	}
	const limit = 64
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, ports := range [][]int{nil, {8080}} {
			sink := &pcapSink{}
			st, err := ImportPcap(context.Background(), bytes.NewReader(data), sink, PcapConfig{Ports: ports, BodyLimit: limit})
			if err != nil {
				msg := err.Error()
				if strings.Contains(msg, "internal error") || !strings.HasPrefix(msg, "import pcap: ") || strings.Contains(msg, "\n") {
					t.Fatalf("bad error: %q", msg)
				}
			}
			checkImported(t, sink, st, err == nil, limit)
		}
	})
}

// checkImported checks that what an import wrote holds together.
func checkImported(t *testing.T, sink *pcapSink, st PcapStats, finished bool, limit int) {
	t.Helper()
	if st.Exchanges != int64(len(sink.exchanges)) {
		t.Fatalf("stats say %d exchanges, the sink has %d", st.Exchanges, len(sink.exchanges))
	}
	if finished && sink.seen != len(sink.exchanges) {
		t.Fatalf("%d requests seen, %d exchanges written", sink.seen, len(sink.exchanges))
	}
	ids := map[int64]bool{}
	var incomplete int64
	for _, e := range sink.exchanges {
		switch {
		case e.ID <= 0 || ids[e.ID]:
			t.Fatalf("exchange ID %d: not positive or not unique", e.ID)
		case e.Direction != snapshots.Inbound || e.Protocol != "http" || e.Method == "" || e.Service == "" || e.URL == "":
			t.Fatalf("exchange %d lacks a field: %+v", e.ID, e)
		case len(e.RequestBody) > limit || len(e.ResponseBody) > limit:
			t.Fatalf("exchange %d: bodies of %d and %d bytes exceed the limit %d", e.ID, len(e.RequestBody), len(e.ResponseBody), limit)
		case e.RequestBodySize < int64(len(e.RequestBody)) || e.ResponseBodySize < int64(len(e.ResponseBody)):
			t.Fatalf("exchange %d: body sizes smaller than the bodies", e.ID)
		case e.Duration < 0:
			t.Fatalf("exchange %d: negative duration %v", e.ID, e.Duration)
		case e.Status == 0 && e.Error == "":
			t.Fatalf("exchange %d: no response and no error", e.ID)
		}
		ids[e.ID] = true
		if e.Error != "" {
			incomplete++
		}
	}
	if incomplete != st.Incomplete {
		t.Fatalf("stats say %d incomplete, %d exchanges have an error", st.Incomplete, incomplete)
	}
}
