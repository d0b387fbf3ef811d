package snapshots

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// memSink keeps what an import decodes, in memory.
type memSink struct {
	exchanges  []*Exchange
	statements []*Statement
}

func (m *memSink) AddExchange(e *Exchange)   { m.exchanges = append(m.exchanges, e) }
func (m *memSink) AddStatement(s *Statement) { m.statements = append(m.statements, s) }

// addExportSeed adds an export of the varied snapshot as a seed, besides
// those under testdata/fuzz (which include the browser HAR samples).
func addExportSeed(f *testing.F, export func(context.Context, *Snapshot, *bytes.Buffer) error) {
	s, err := Open(variedSnapshot(f))
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	var buf bytes.Buffer
	if err := export(context.Background(), s, &buf); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
}

// checkRules checks that what was imported keeps the rules of an import:
// something was imported; each exchange has a method, a URL that parses, a
// direction, a status in 100–599 (or 0 with an error), no negative duration
// or size; no statement has a negative duration.
func checkRules(t *testing.T, m *memSink) {
	if len(m.exchanges)+len(m.statements) == 0 {
		t.Fatal("import succeeded with nothing imported")
	}
	for _, e := range m.exchanges {
		_, err := url.Parse(e.URL)
		switch {
		case e.Method == "" || strings.ContainsAny(e.Method, " \t\r\n/"):
			t.Fatalf("exchange %d: method %q", e.ID, e.Method)
		case e.URL == "" || err != nil:
			t.Fatalf("exchange %d: url %q", e.ID, e.URL)
		case e.Direction != Inbound && e.Direction != Outbound:
			t.Fatalf("exchange %d: direction %q", e.ID, e.Direction)
		case !(e.Status >= 100 && e.Status <= 599 || e.Status == 0 && e.Error != ""):
			t.Fatalf("exchange %d: status %d (error %q)", e.ID, e.Status, e.Error)
		case e.Duration < 0 || e.RequestBodySize < 0 || e.ResponseBodySize < 0:
			t.Fatalf("exchange %d: duration %s, sizes %d and %d", e.ID, e.Duration, e.RequestBodySize, e.ResponseBodySize)
		}
	}
	for _, s := range m.statements {
		if s.Duration < 0 {
			t.Fatalf("statement %d: duration %s", s.ID, s.Duration)
		}
	}
}

// checkReencode checks that what was imported survives our own encoding.
func checkReencode(t *testing.T, m *memSink) {
	opts := cmpopts.EquateEmpty()
	for _, e := range m.exchanges {
		b, err := json.Marshal(toJSONExchange(e))
		if err != nil {
			t.Fatalf("marshal exchange %d: %v", e.ID, err)
		}
		var j jsonExchange
		if err := json.Unmarshal(b, &j); err != nil {
			t.Fatalf("unmarshal exchange %d: %v", e.ID, err)
		}
		back, err := j.exchange()
		if err != nil {
			t.Fatalf("exchange %d does not decode after encoding: %v\n%s", e.ID, err, b)
		}
		if diff := cmp.Diff(e, back, opts); diff != "" {
			t.Fatalf("exchange %d changed through JSON (-imported +again):\n%s", e.ID, diff)
		}
	}
	for _, s := range m.statements {
		b, err := json.Marshal(toJSONStatement(s))
		if err != nil {
			t.Fatalf("marshal statement %d: %v", s.ID, err)
		}
		var j jsonStatement
		if err := json.Unmarshal(b, &j); err != nil {
			t.Fatal(err)
		}
		back, err := j.statement()
		if err != nil {
			t.Fatalf("statement %d does not decode after encoding: %v", s.ID, err)
		}
		if diff := cmp.Diff(s, back, opts); diff != "" {
			t.Fatalf("statement %d changed through JSON (-imported +again):\n%s", s.ID, diff)
		}
	}
}

func FuzzImportJSONL(f *testing.F) {
	addExportSeed(f, func(ctx context.Context, s *Snapshot, b *bytes.Buffer) error { return ExportJSONL(ctx, s, b) })
	f.Fuzz(func(t *testing.T, data []byte) {
		m := &memSink{}
		if err := importJSONL(context.Background(), bytes.NewReader(data), newImporter(m, nil)); err != nil {
			return
		}
		checkRules(t, m)
		checkReencode(t, m)
	})
}

func FuzzImportHAR(f *testing.F) {
	addExportSeed(f, func(ctx context.Context, s *Snapshot, b *bytes.Buffer) error { return ExportHAR(ctx, s, b) })
	f.Fuzz(func(t *testing.T, data []byte) {
		m := &memSink{}
		if err := importHAR(context.Background(), bytes.NewReader(data), newImporter(m, nil)); err != nil {
			return
		}
		checkRules(t, m)
		checkReencode(t, m)
	})
}

// FuzzResultRecord decodes arbitrary records and blocks of a run file:
// errors, never a panic, and what decodes encodes back the same.
func FuzzResultRecord(f *testing.F) {
	strs := []string{PhaseLoad, "GET /orders", "GET", "SELECT 1"}
	added := func(enc *resultEncoder) []string { // by enc, after strs
		var out []string
		for _, s := range enc.newStrs {
			out = append(out, s.s)
		}
		return out
	}
	newEncoder := func() *resultEncoder {
		enc := &resultEncoder{base: 1e18, in: newInterner()}
		for _, s := range strs { // the ids of strs, in order
			enc.in.id(fewValues, s)
			enc.in.id(fewValues, s)
		}
		return enc
	}
	enc := newEncoder()
	for i := 1; i <= 10; i++ {
		f.Add(enc.append(nil, sampleResult(i)))
	}
	withCalls := sampleResult(4)
	withCalls.UpstreamCounted, withCalls.Upstream = true, []UpstreamCount{{Service: "catalog.test", Endpoint: "GET /products/{id}", Count: 20, Duration: 3e6, Misses: 1}}
	f.Add(enc.append(nil, withCalls))
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := resultDecoder{base: 1e18, load: func(from int64) ([]string, error) {
			if from > int64(len(strs)) {
				return nil, nil
			}
			return strs[from-1:], nil
		}}
		r, err := dec.decode(data)
		if err == nil {
			// Interning may differ (a string seen once is inline), but
			// the result must survive.
			enc := newEncoder()
			rec := enc.append(nil, r)
			again, err := (&resultDecoder{base: 1e18, strs: append(slices.Clip(strs), added(enc)...)}).decode(rec)
			if err != nil {
				t.Fatalf("re-encoded record: %v", err)
			}
			if diff := cmp.Diff(r, again); diff != "" {
				t.Errorf("re-encoded record (-first +again):\n%s", diff)
			}
		}
		// The same bytes as a block.
		blockHolds(data, 1)
		for rest := data; len(rest) > 0; {
			var err error
			if _, rest, _, err = splitRecord(rest); err != nil {
				break
			}
		}
	})
}
