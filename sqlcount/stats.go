package sqlcount

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"
)

// statsJSON is the document WriteJSON writes; DESIGN.md names its keys.
type statsJSON struct {
	Statements   int64             `json:"statements"`
	Fingerprints []fingerprintJSON `json:"fingerprints"`
}

type fingerprintJSON struct {
	Fingerprint string  `json:"fingerprint"`
	Count       int64   `json:"count"`
	TotalMS     float64 `json:"total_ms"`
	MeanMS      float64 `json:"mean_ms"`
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// WriteJSON writes s as an indented JSON document: {"statements": N,
// "fingerprints": [{"fingerprint", "count", "total_ms", "mean_ms"}, …]},
// durations in milliseconds, followed by a newline.
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
	out := statsJSON{Statements: s.Statements, Fingerprints: []fingerprintJSON{}}
	for _, f := range s.Fingerprints {
		out.Fingerprints = append(out.Fingerprints, fingerprintJSON{
			Fingerprint: f.Fingerprint, Count: f.Count, TotalMS: ms(f.Total), MeanMS: ms(f.Mean),
		})
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("sqlcount: %w", err)
	}
	return append(b, '\n'), nil
}

// WriteTable writes s for a terminal: a blank line, the totals, then a table
// of the fingerprints (count, total and mean time in milliseconds), most
// frequent first.
func (s Stats) WriteTable(w io.Writer) error {
	if _, err := fmt.Fprintf(w, "\n%d statements, %d fingerprints\n", s.Statements, len(s.Fingerprints)); err != nil {
		return err
	}
	if len(s.Fingerprints) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "COUNT\tTOTAL ms\tMEAN ms\t\tFINGERPRINT")
	for _, f := range s.Fingerprints {
		fp := f.Fingerprint
		if fp == "" {
			fp = "(empty query)"
		}
		fmt.Fprintf(tw, "%d\t%.3f\t%.3f\t\t%s\n", f.Count, ms(f.Total), ms(f.Mean), fp)
	}
	return tw.Flush()
}
