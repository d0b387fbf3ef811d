package snapshots

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// SQLHistogram counts statements per interval of time: the statements a SQL
// counter could not attribute to a request, so that an estimate can spread
// them over the requests in flight when they ran. Not safe for concurrent
// use.
type SQLHistogram struct {
	// Bin is the width of an interval; zero means no histogram was kept.
	Bin time.Duration
	// Counts maps an interval, the Unix time in nanoseconds of its start
	// divided by Bin, to the statements that started in it.
	Counts map[int64]int64
}

// DefaultSQLBin is the interval width of the histograms a counter keeps.
const DefaultSQLBin = time.Millisecond

// Add counts one statement started at t; a zero Bin becomes DefaultSQLBin.
func (h *SQLHistogram) Add(t time.Time) {
	if h.Bin <= 0 {
		h.Bin = DefaultSQLBin
	}
	if h.Counts == nil {
		h.Counts = map[int64]int64{}
	}
	h.Counts[t.UnixNano()/int64(h.Bin)]++
}

// Total returns the number of statements counted.
func (h *SQLHistogram) Total() int64 {
	var n int64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// Kept reports whether the histogram was kept (Bin > 0), even if empty.
func (h *SQLHistogram) Kept() bool { return h.Bin > 0 }

// histogramJSON is how a run file stores a SQLHistogram.
type histogramJSON struct {
	BinNS  int64      `json:"bin_ns"`
	Counts [][2]int64 `json:"counts"` // [interval, count], in no order
}

func marshalHistogram(h SQLHistogram) (string, error) {
	doc := histogramJSON{BinNS: int64(h.Bin), Counts: make([][2]int64, 0, len(h.Counts))}
	for k, n := range h.Counts {
		doc.Counts = append(doc.Counts, [2]int64{k, n})
	}
	b, err := json.Marshal(doc)
	return string(b), err
}

func unmarshalHistogram(s string) (SQLHistogram, error) {
	var doc histogramJSON
	if err := json.Unmarshal([]byte(s), &doc); err != nil {
		return SQLHistogram{}, err
	}
	h := SQLHistogram{Bin: time.Duration(doc.BinNS), Counts: make(map[int64]int64, len(doc.Counts))}
	for _, kn := range doc.Counts {
		h.Counts[kn[0]] += kn[1]
	}
	return h, nil
}

// SQLSpan is one request as an estimate of its SQL sees it: its group
// (an endpoint), when it was in flight, and the statements attributed to it.
type SQLSpan struct {
	// Key names the group the request belongs to, e.g. its endpoint.
	Key string
	// Start and End bound the request in flight.
	Start, End time.Time
	// Statements counts the statements attributed to it exactly.
	Statements int64
}

// MaxSQLSpans is the most inbound exchanges SQLSpans reads: the first
// ones by start, a sample that bounds the memory of `replay record`'s
// summary however long the recording.
const MaxSQLSpans = 200_000

// SQLSpans returns the inbound exchanges of s as spans keyed by service and
// endpoint (InventoryKey), with the statements attributed to each, and a
// histogram of the statements attributed to none of them; of a snapshot of
// more than MaxSQLSpans inbound exchanges, the first MaxSQLSpans by start
// and the statements that started before the last of them ended.
func (s *Snapshot) SQLSpans(ctx context.Context) ([]SQLSpan, SQLHistogram, error) {
	spans, h, err := s.sqlSpans(ctx, MaxSQLSpans)
	if err != nil {
		return nil, h, fmt.Errorf("read SQL spans of %s: %w", s.path, err)
	}
	return spans, h, nil
}

// InventoryKey is the SQLSpan key of an inbound endpoint of a service.
func InventoryKey(service, endpoint string) string { return service + " " + endpoint }

func (s *Snapshot) sqlSpans(ctx context.Context, limit int) ([]SQLSpan, SQLHistogram, error) {
	h := SQLHistogram{Bin: DefaultSQLBin}
	rows, err := s.db.QueryContext(ctx, `SELECT e.id, e.service, e.endpoint, e.start_ns, e.duration_ns, COALESCE(n.n, 0)
		FROM exchanges e LEFT JOIN (SELECT exchange_id, count(*) AS n FROM statements
			WHERE exchange_id != 0 GROUP BY exchange_id) n ON n.exchange_id = e.id
		WHERE e.direction != 'outbound' ORDER BY e.start_ns LIMIT ?`, limit+1)
	if err != nil {
		return nil, h, err
	}
	var spans []SQLSpan
	keys := map[string]string{} // one string a key, not one a span
	until := int64(math.MaxInt64)
	for rows.Next() {
		var id, start, dur, n int64
		var service, endpoint string
		if err := rows.Scan(&id, &service, &endpoint, &start, &dur, &n); err != nil {
			rows.Close()
			return nil, h, err
		}
		if len(spans) == limit {
			until = 0
			for _, sp := range spans {
				until = max(until, sp.End.UnixNano())
			}
			break
		}
		k, ok := keys[service+" "+endpoint]
		if !ok {
			k = InventoryKey(service, endpoint)
			keys[k] = k
		}
		spans = append(spans, SQLSpan{Key: k, Start: time.Unix(0, start), End: time.Unix(0, start+dur), Statements: n})
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return nil, h, err
	}
	rows.Close()
	// Statements of no inbound exchange; empty ones are a pool's pings.
	rows, err = s.db.QueryContext(ctx, `SELECT st.start_ns FROM statements st
		LEFT JOIN exchanges e ON e.id = st.exchange_id AND e.direction != 'outbound'
		WHERE e.id IS NULL AND st.fingerprint != '' AND st.start_ns <= ?`, until)
	if err != nil {
		return nil, h, err
	}
	defer rows.Close()
	for rows.Next() {
		var start int64
		if err := rows.Scan(&start); err != nil {
			return nil, h, err
		}
		h.Add(time.Unix(0, start))
	}
	return spans, h, rows.Err()
}
