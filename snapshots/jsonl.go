package snapshots

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// JSON Lines format identification, the "format" of the header line.
const (
	jsonlFormat  = "replay-jsonl"
	jsonlVersion = 1
)

// ExportJSONL writes the snapshot as JSON Lines: a header line
// {"format":"replay-jsonl","version":1,...} with the capture statistics and
// rules, then one exchange per line ({"type":"exchange",...}) in order of ID,
// then one statement per line ({"type":"statement",...}). Bodies that are not
// valid UTF-8 are base64-encoded and marked with "…_encoding":"base64".
func ExportJSONL(ctx context.Context, s *Snapshot, w io.Writer) error {
	if err := exportJSONL(ctx, s, w); err != nil {
		return fmt.Errorf("export jsonl: %w", err)
	}
	return nil
}

func exportJSONL(ctx context.Context, s *Snapshot, w io.Writer) error {
	h, err := headerOf(s, jsonlFormat, jsonlVersion)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(h); err != nil {
		return err
	}
	for e, err := range s.Exchanges(ctx, Filter{}) {
		if err != nil {
			return err
		}
		if err := enc.Encode(toJSONExchange(e)); err != nil {
			return err
		}
	}
	for st, err := range s.Statements(ctx) {
		if err != nil {
			return err
		}
		if err := enc.Encode(toJSONStatement(st)); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// headerOf describes s for the head of an exported file.
func headerOf(s *Snapshot, format string, version int) (*fileHeader, error) {
	stats, err := s.Stats()
	if err != nil {
		return nil, err
	}
	rules, err := s.Rules()
	if err != nil {
		return nil, err
	}
	h := &fileHeader{Format: format, Version: version, Capture: &stats, Rules: ruleStrings(rules)}
	if created, err := s.Created(); err == nil {
		h.Created = formatTime(created)
	}
	return h, nil
}

// ImportJSONL reads JSON Lines written by ExportJSONL into w, keeping IDs,
// endpoints and all other fields (the user's rules, given to Create, replace
// the endpoints they match). The file's capture statistics and rules carry
// over. Errors name the line.
func ImportJSONL(ctx context.Context, r io.Reader, w *Writer) error {
	im := newImporter(w, w.rules)
	if err := importJSONL(ctx, r, im); err != nil {
		return fmt.Errorf("import jsonl: %w", err)
	}
	im.finish(w)
	return nil
}

func importJSONL(ctx context.Context, r io.Reader, im *importer) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("line %d: %w", n, err)
		}
		if len(bytes.TrimSpace(line)) > 0 {
			if lerr := importLine(im, line, n); lerr != nil {
				return fmt.Errorf("line %d: %w", n, lerr)
			}
		}
		if err != nil { // io.EOF
			break
		}
		if n%1024 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if im.header == nil {
		return errors.New("empty file: no header line")
	}
	return nil
}

func importLine(im *importer, line []byte, n int) error {
	if im.header == nil {
		var h fileHeader
		if err := json.Unmarshal(line, &h); err != nil || h.Format != jsonlFormat {
			return fmt.Errorf("not a replay JSON Lines file: the first line must be a header with \"format\":%q", jsonlFormat)
		}
		if h.Version != jsonlVersion {
			return fmt.Errorf("%w %d (this build reads version %d)", ErrVersion, h.Version, jsonlVersion)
		}
		im.header = &h
		return nil
	}
	var kind struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(line, &kind); err != nil {
		return jsonError(err)
	}
	switch kind.Type {
	case "exchange":
		var j jsonExchange
		if err := json.Unmarshal(line, &j); err != nil {
			return jsonError(err)
		}
		e, err := j.exchange()
		if err != nil {
			return fmt.Errorf("exchange %d: %w", j.ID, err)
		}
		return im.exchange(e)
	case "statement":
		var j jsonStatement
		if err := json.Unmarshal(line, &j); err != nil {
			return jsonError(err)
		}
		s, err := j.statement()
		if err != nil {
			return fmt.Errorf("statement %d: %w", j.ID, err)
		}
		return im.statement(s)
	case "":
		return errors.New(`no "type" (want "exchange" or "statement")`)
	}
	return fmt.Errorf("unknown type %q (want \"exchange\" or \"statement\")", kind.Type)
}

// jsonError shortens encoding/json's errors to what a user can act on.
func jsonError(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("bad JSON: unexpected end of file")
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("field %q: got a JSON %s, want %s", te.Field, te.Value, te.Type)
	}
	return fmt.Errorf("bad JSON: %w", err)
}
