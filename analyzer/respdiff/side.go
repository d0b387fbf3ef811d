package respdiff

import (
	"net/url"
	"strings"

	"github.com/replaykit/replay/snapshots"
)

// Side is one side's answers to the requests of one endpoint.
type Side struct {
	// Samples are the answers compared field by field, by recorded
	// exchange ID, in the order they came (the same request answered
	// twice gives the side's own noise).
	Samples map[int64][]Answer
	// Hashes count the answers beyond the sample by body hash.
	Hashes []snapshots.ResponseHash
	// HashedOneIn, above 1, says Hashes hold those of 1 in that many of
	// the exchanges answered (HashSampled), so that a run of millions
	// of them is compared in bounded memory.
	HashedOneIn int64
	// Host is the host:port (or URL) the side was served from: in strings,
	// headers and text it reads as {host}, so that links to a build's own
	// address compare equal; "" leaves them as they are.
	Host string
}

// Add adds an answer to the request recorded as exchange id.
func (s *Side) Add(id int64, a Answer) {
	if s.Samples == nil {
		s.Samples = map[int64][]Answer{}
	}
	if a.parsed == nil {
		a.parsed = new(parsed)
	}
	s.Samples[id] = append(s.Samples[id], a)
}

// RecordedSide is the side of recorded exchanges: one answer each, and
// the hash of each complete recorded body that holds no redacted value (to
// compare the answers beyond the sample with), served from the first
// exchange's service.
func RecordedSide(exchanges []*snapshots.Exchange) *Side {
	s := &Side{Samples: map[int64][]Answer{}}
	for _, e := range exchanges {
		s.AddRecorded(e, true)
	}
	return s
}

// AddRecorded adds a recorded exchange to a side of them (RecordedSide),
// in order of ID: its hash, and its answer when sample (a build's answer
// to it was sampled). One read for its hash only is not kept: a recording
// of any size is then read in memory of its sample.
func (s *Side) AddRecorded(e *snapshots.Exchange, sample bool) {
	if s.Host == "" {
		s.Host = e.Service
	}
	if sample {
		if s.Samples == nil {
			s.Samples = map[int64][]Answer{}
		}
		s.Samples[e.ID] = nil // one answer per exchange, the last given
		s.Add(e.ID, FromExchange(e))
	}
	// A gRPC call's recorded answer (its document, replayer.GRPCAnswer)
	// hashes unlike a build's answer, hashed as it streams: its sample
	// alone is compared.
	if !e.ResponseTruncated() && !redacted(string(e.ResponseBody)) && !e.IsGRPC() {
		s.Hashes = append(s.Hashes, snapshots.ResponseHash{ExchangeID: e.ID, Endpoint: e.Endpoint, Status: e.Status,
			Hash: fnv64(e.ResponseBody), Count: 1})
	}
}

// redacted reports whether s holds a value the recorder redacted (as is,
// or escaped in a URL).
func redacted(s string) bool {
	return strings.Contains(s, snapshots.Redacted) || strings.Contains(s, url.QueryEscape(snapshots.Redacted))
}
