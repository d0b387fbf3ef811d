package snapshots

import (
	"bytes"
	"context"
	"encoding/json"
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
		checkReencode(t, m)
	})
}
