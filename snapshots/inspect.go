package snapshots

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"
)

// Inventory summarizes what a snapshot holds: its exchanges per direction,
// service and endpoint, their statuses and latency, and the SQL statements.
type Inventory struct {
	// Path is the snapshot file.
	Path string `json:"snapshot"`
	// Exchanges counts all exchanges; Inbound and Outbound split them.
	Exchanges int64 `json:"exchanges"`
	Inbound   int64 `json:"inbound"`
	Outbound  int64 `json:"outbound"`
	// Statements counts all SQL statements; Unattributed those that belong
	// to no recorded inbound exchange.
	Statements   int64 `json:"statements"`
	Unattributed int64 `json:"unattributed_statements"`
	// Endpoints lists each (direction, service, endpoint), inbound first,
	// then by service and endpoint.
	Endpoints []EndpointSummary `json:"endpoints"`
	// Fingerprints lists the most frequent statement fingerprints, most
	// frequent first (at most TopFingerprints).
	Fingerprints []FingerprintSummary `json:"fingerprints"`
	// Capture is what the recording saw and kept.
	Capture CaptureStats `json:"capture"`
	// Redaction says how secrets were redacted when the snapshot was
	// written (Snapshot.Redaction): "default" plus the names added, or
	// "off"; empty when the file does not say.
	Redaction string `json:"redaction,omitempty"`
}

// TopFingerprints is how many fingerprints an Inventory lists at most.
const TopFingerprints = 10

// EndpointSummary describes the exchanges of one endpoint of one service.
type EndpointSummary struct {
	// Direction is Inbound or Outbound.
	Direction Direction `json:"direction"`
	// Service is the host:port the exchanges went to.
	Service string `json:"service"`
	// Endpoint is method plus path template, e.g. "GET /orders/{id}".
	Endpoint string `json:"endpoint"`
	// Count is the number of exchanges.
	Count int64 `json:"count"`
	// Status counts the exchanges per status class.
	Status StatusClasses `json:"status"`
	// AvgMS and P95MS are the mean and 95th percentile of the recorded
	// durations, in milliseconds.
	AvgMS float64 `json:"avg_ms"`
	P95MS float64 `json:"p95_ms"`
	// Statements counts the SQL statements attributed to these exchanges;
	// SQLPerRequest is Statements / Count (zero for outbound endpoints,
	// since statements belong to inbound requests).
	Statements    int64   `json:"statements"`
	SQLPerRequest float64 `json:"sql_per_request"`
	// SQLMethod says how SQLPerRequest was found for an inbound endpoint:
	// "exact" (every statement that ran while its requests were in flight
	// was attributed), "estimated" (statements that could not be
	// attributed were shared out by least squares over windows of time,
	// SQLMargin says how sure), or "unknown"; empty when not worked out.
	SQLMethod string `json:"sql_method,omitempty"`
	// SQLMargin is the half-width of the estimate's 95% interval, in
	// statements per request; zero when exact.
	SQLMargin float64 `json:"sql_margin,omitempty"`
}

// StatusClasses counts exchanges by response status class. Failed counts
// those that got no response (a transport error or status 0).
type StatusClasses struct {
	Informational int64 `json:"1xx,omitempty"` // 100–199
	Success       int64 `json:"2xx"`           // 200–299
	Redirect      int64 `json:"3xx"`           // 300–399
	ClientError   int64 `json:"4xx"`           // 400–499
	ServerError   int64 `json:"5xx"`           // 500 and up
	Failed        int64 `json:"failed"`        // no response
}

func (c *StatusClasses) add(status int, errText string) {
	switch {
	case errText != "" || status == 0:
		c.Failed++
	case status < 200:
		c.Informational++
	case status < 300:
		c.Success++
	case status < 400:
		c.Redirect++
	case status < 500:
		c.ClientError++
	default:
		c.ServerError++
	}
}

// FingerprintSummary counts the statements of one fingerprint.
type FingerprintSummary struct {
	// Fingerprint is the folded statement text (the text itself when the
	// statement has no fingerprint).
	Fingerprint string `json:"fingerprint"`
	// Count is the number of statements.
	Count int64 `json:"count"`
	// TotalMS is their summed duration in milliseconds.
	TotalMS float64 `json:"total_ms"`
}

type endpointKey struct {
	dir               Direction
	service, endpoint string
}

// Inspect summarizes s. It reads only the columns it needs, not bodies;
// latency percentiles are computed in Go from every duration, so memory
// grows by 8 bytes per exchange.
func Inspect(ctx context.Context, s *Snapshot) (*Inventory, error) {
	inv, err := inspect(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("inspect snapshot %s: %w", s.path, err)
	}
	return inv, nil
}

func inspect(ctx context.Context, s *Snapshot) (*Inventory, error) {
	inv := &Inventory{Path: s.path, Endpoints: []EndpointSummary{}, Fingerprints: []FingerprintSummary{}}
	byKey := map[endpointKey]*EndpointSummary{}
	durations := map[endpointKey][]int64{}
	rows, err := s.db.QueryContext(ctx, `SELECT direction, service, endpoint, status, duration_ns, error FROM exchanges`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var k endpointKey
		var status int
		var dur int64
		var errText string
		if err := rows.Scan(&k.dir, &k.service, &k.endpoint, &status, &dur, &errText); err != nil {
			return nil, err
		}
		sum := byKey[k]
		if sum == nil {
			sum = &EndpointSummary{Direction: k.dir, Service: k.service, Endpoint: k.endpoint}
			byKey[k] = sum
		}
		sum.Count++
		sum.Status.add(status, errText)
		durations[k] = append(durations[k], dur)
		inv.Exchanges++
		if k.dir == Outbound {
			inv.Outbound++
		} else {
			inv.Inbound++
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if err := attributeStatements(ctx, s, inv, byKey); err != nil {
		return nil, err
	}
	for k, sum := range byKey {
		sum.AvgMS, sum.P95MS = avgP95(durations[k])
		sum.SQLPerRequest = round3(float64(sum.Statements) / float64(sum.Count))
		inv.Endpoints = append(inv.Endpoints, *sum)
	}
	slices.SortFunc(inv.Endpoints, func(a, b EndpointSummary) int {
		return cmp.Or(cmp.Compare(dirIndex(a.Direction), dirIndex(b.Direction)),
			cmp.Compare(a.Service, b.Service), cmp.Compare(a.Endpoint, b.Endpoint))
	})
	if inv.Fingerprints, err = topFingerprints(ctx, s); err != nil {
		return nil, err
	}
	if inv.Capture, err = s.Stats(); err != nil {
		return nil, err
	}
	if inv.Redaction, err = s.Redaction(); err != nil {
		return nil, err
	}
	return inv, nil
}

// attributeStatements counts statements per endpoint of the exchange they
// belong to, in SQL: a join, not a map of every exchange.
func attributeStatements(ctx context.Context, s *Snapshot, inv *Inventory, byKey map[endpointKey]*EndpointSummary) error {
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM statements`).Scan(&inv.Statements); err != nil {
		return err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT e.direction, e.service, e.endpoint, count(*)
		FROM statements st JOIN exchanges e ON e.id = st.exchange_id
		WHERE st.exchange_id != 0 AND e.direction != 'outbound'
		GROUP BY e.direction, e.service, e.endpoint`)
	if err != nil {
		return err
	}
	defer rows.Close()
	attributed := int64(0)
	for rows.Next() {
		var k endpointKey
		var n int64
		if err := rows.Scan(&k.dir, &k.service, &k.endpoint, &n); err != nil {
			return err
		}
		if sum := byKey[k]; sum != nil {
			sum.Statements += n
			attributed += n
		}
	}
	inv.Unattributed = inv.Statements - attributed
	return rows.Err()
}

func topFingerprints(ctx context.Context, s *Snapshot) ([]FingerprintSummary, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT fp, count(*) AS n, sum(duration_ns)
		FROM (SELECT COALESCE(NULLIF(fingerprint, ''), sql) AS fp, duration_ns FROM statements)
		GROUP BY fp ORDER BY n DESC, fp LIMIT ?`, TopFingerprints)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []FingerprintSummary{}
	for rows.Next() {
		var f FingerprintSummary
		var total int64
		if err := rows.Scan(&f.Fingerprint, &f.Count, &total); err != nil {
			return nil, err
		}
		f.TotalMS = round3(float64(total) / float64(time.Millisecond))
		out = append(out, f)
	}
	return out, rows.Err()
}

// avgP95 returns the mean and the 95th percentile (nearest rank) of ds, in
// milliseconds rounded to microseconds. It sorts ds.
func avgP95(ds []int64) (avg, p95 float64) {
	if len(ds) == 0 {
		return 0, 0
	}
	slices.Sort(ds)
	var sum float64
	for _, d := range ds {
		sum += float64(d)
	}
	rank := int(math.Ceil(0.95*float64(len(ds)))) - 1
	ms := float64(time.Millisecond)
	return round3(sum / float64(len(ds)) / ms), round3(float64(ds[rank]) / ms)
}

// round3 rounds to three decimals, so reports and golden files are stable.
func round3(f float64) float64 { return math.Round(f*1000) / 1000 }
