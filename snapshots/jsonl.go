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
	jsonlFormat = "replay-jsonl"
	// jsonlVersion 2 added response trailers and gRPC messages; version 1
	// files read as before.
	jsonlVersion = 2
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
// over. A record that breaks the rules (no method, URL or direction, a
// status out of 100–599, a negative duration, a duplicate id…) or a line
// that is not JSON is skipped; a file that is not JSON Lines, or a file
// from which nothing could be imported (ErrNothingImported) is an error.
// Errors name the line.
func ImportJSONL(ctx context.Context, r io.Reader, w *Writer) error {
	return ImportJSONLWith(ctx, r, w, ImportOptions{})
}

// ImportJSONLWith is ImportJSONL with options: opts.Rejected hears of each
// record skipped (opts.Direction does not apply: records carry theirs).
func ImportJSONLWith(ctx context.Context, r io.Reader, w *Writer, opts ImportOptions) error {
	im := newImporter(w, w.rules)
	im.rejected = opts.Rejected
	if err := importJSONL(ctx, r, im); err != nil {
		return fmt.Errorf("import jsonl: %w", err)
	}
	im.finish(w)
	return nil
}

func importJSONL(ctx context.Context, r io.Reader, im *importer) error {
	br := bufio.NewReaderSize(r, 64<<10)
	records := 0
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("line %d: %w", n, err)
		}
		if len(bytes.TrimSpace(line)) > 0 {
			if im.header != nil {
				records++
			}
			lerr := im.entry("entry", records, n, importLine(im, line))
			if lerr != nil {
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
	return im.done()
}

// importLine imports one line; an error that rejects the record alone is
// an errReject.
func importLine(im *importer, line []byte) error {
	if im.header == nil {
		var h fileHeader
		if err := json.Unmarshal(line, &h); err != nil || h.Format != jsonlFormat {
			return fmt.Errorf("not a replay JSON Lines file: the first line must be a header with \"format\":%q", jsonlFormat)
		}
		if h.Version < 1 || h.Version > jsonlVersion {
			return fmt.Errorf("%w %d (this build reads versions 1 to %d)", ErrVersion, h.Version, jsonlVersion)
		}
		im.header = &h
		return nil
	}
	line = bytes.TrimSpace(line)
	var kind struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(line, &kind); err != nil {
		return lineError(err, line)
	}
	switch kind.Type {
	case "exchange":
		var j jsonExchange
		if err := json.Unmarshal(line, &j); err != nil {
			return lineError(err, line)
		}
		if j.Direction == "" {
			return reject(fmt.Errorf("exchange %d: no direction (want inbound or outbound)", j.ID))
		}
		e, err := j.exchange()
		if err != nil {
			return reject(fmt.Errorf("exchange %d: %w", j.ID, err))
		}
		if err := im.exchange(e); err != nil {
			return reject(fmt.Errorf("exchange %d: %w", j.ID, err))
		}
		return nil
	case "statement":
		var j jsonStatement
		if err := json.Unmarshal(line, &j); err != nil {
			return lineError(err, line)
		}
		s, err := j.statement()
		if err == nil {
			err = im.statement(s)
		}
		if err != nil {
			return reject(fmt.Errorf("statement %d: %w", j.ID, err))
		}
		return nil
	case "":
		return reject(errors.New(`no "type" (want "exchange" or "statement")`))
	}
	return reject(fmt.Errorf("unknown type %q (want \"exchange\" or \"statement\")", kind.Type))
}

// lineError is the error of a record line that does not decode: bad JSON
// or a field of the wrong JSON type rejects the line alone, the rest of
// the file is imported.
func lineError(err error, line []byte) error {
	var se *json.SyntaxError
	if errors.As(err, &se) && se.Offset >= int64(len(line)) {
		return reject(errors.New("bad JSON: unexpected end of line"))
	}
	return reject(jsonError(err))
}

// recordError is the error of a HAR record that does not decode: a field
// of the wrong JSON type rejects the record; bad JSON ends the import (the
// decoder cannot find the next record after it).
func recordError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return reject(jsonError(err))
	}
	return jsonError(err)
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
