package sqlcore

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"
)

// JSONSchemaVersion is the version of the JSON WriteJSON writes: adding a
// key keeps it; renaming or removing one, or changing its type, raises it.
const JSONSchemaVersion = 1

// statsJSON is the document WriteJSON writes; DESIGN.md names its keys.
type statsJSON struct {
	SchemaVersion int               `json:"schema_version"` // of docs/schema/sqlcount.json: JSONSchemaVersion
	Statements    int64             `json:"statements"`
	Errors        int64             `json:"errors"`
	Fingerprints  []fingerprintJSON `json:"fingerprints"`
}

type fingerprintJSON struct {
	Fingerprint string  `json:"fingerprint"`
	Count       int64   `json:"count"`
	Errors      int64   `json:"errors"`
	TotalMS     float64 `json:"total_ms"`
	MeanMS      float64 `json:"mean_ms"`
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// WriteJSON writes s as an indented JSON document: {"schema_version": 1, "statements": N,
// "errors": N, "fingerprints": [{"fingerprint", "count", "errors",
// "total_ms", "mean_ms"}, …]}, durations in milliseconds, followed by a
// newline. Statements and count leave out the statements the server
// rejected, which errors counts.
func (s Stats) WriteJSON(w io.Writer) error {
	b, err := s.marshalJSON()
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// WriteJSONFile writes the document WriteJSON writes to the file path,
// replacing what it held.
func (s Stats) WriteJSONFile(path string) error {
	b, err := s.marshalJSON()
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("sqlcount: %w", err)
	}
	return nil
}

func (s Stats) marshalJSON() ([]byte, error) {
	out := statsJSON{SchemaVersion: JSONSchemaVersion, Statements: s.Statements, Errors: s.Errors, Fingerprints: []fingerprintJSON{}}
	for _, f := range s.Fingerprints {
		out.Fingerprints = append(out.Fingerprints, fingerprintJSON{
			Fingerprint: f.Fingerprint, Count: f.Count, Errors: f.Errors, TotalMS: ms(f.Total), MeanMS: ms(f.Mean),
		})
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("sqlcount: %w", err)
	}
	return append(b, '\n'), nil
}

// count is "1 thing" or "n things".
func count(n int64, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// WriteTable writes s for a terminal: a blank line, the totals, then a table
// of the fingerprints (count, total and mean time in milliseconds), most
// frequent first. When the server rejected statements, the totals say how
// many and an ERRORS column counts them per fingerprint.
func (s Stats) WriteTable(w io.Writer) error {
	failed := ""
	if s.Errors > 0 {
		failed = fmt.Sprintf(" (and %d the server rejected)", s.Errors)
	}
	if _, err := fmt.Fprintf(w, "\n%s%s, %s\n", count(s.Statements, "statement"), failed, count(int64(len(s.Fingerprints)), "fingerprint")); err != nil {
		return err
	}
	if len(s.Fingerprints) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	if s.Errors > 0 {
		fmt.Fprintln(tw, "COUNT\tERRORS\tTOTAL ms\tMEAN ms\t\tFINGERPRINT")
	} else {
		fmt.Fprintln(tw, "COUNT\tTOTAL ms\tMEAN ms\t\tFINGERPRINT")
	}
	for _, f := range s.Fingerprints {
		fp := f.Fingerprint
		if fp == "" {
			fp = "(empty query)"
		}
		if s.Errors > 0 {
			fmt.Fprintf(tw, "%d\t%d\t%.3f\t%.3f\t\t%s\n", f.Count, f.Errors, ms(f.Total), ms(f.Mean), fp)
		} else {
			fmt.Fprintf(tw, "%d\t%.3f\t%.3f\t\t%s\n", f.Count, ms(f.Total), ms(f.Mean), fp)
		}
	}
	return tw.Flush()
}
