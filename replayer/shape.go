package replayer

import (
	"cmp"
	"hash/fnv"
	"slices"
)

// shapeKey identifies a request's shape: its method, path, query (keys
// sorted) and body. Requests of one shape are expected to run the same SQL;
// an endpoint's requests may have many shapes ("GET /items?kind=a" and
// "?kind=b").
type shapeKey [16]byte

func shapeOf(t *template) shapeKey {
	h := fnv.New128a()
	h.Write([]byte(t.method))
	h.Write([]byte{0})
	h.Write([]byte(t.url.EscapedPath()))
	h.Write([]byte{0})
	h.Write([]byte(t.url.Query().Encode())) // Encode sorts by key
	h.Write([]byte{0})
	h.Write(t.body)
	var k shapeKey
	h.Sum(k[:0])
	return k
}

// MaxShapes is the most request shapes explainPicks tells apart per
// endpoint, so that memory stays bounded over a big snapshot of distinct
// requests: the requests of further shapes are left out of the weights.
const MaxShapes = 4096

// explainPick is one request of the explain phase and the number of
// requests of one pass of the request sequence it stands for.
type explainPick struct {
	t      *template
	weight float64
}

// explainPicks chooses the explain phase's requests: per endpoint, one
// request of each distinct shape while there are at most perEndpoint of
// them; beyond, a systematic sample of perEndpoint strata spread over the
// shapes by their frequency in the request sequence (the commonest shapes
// first), so that a shape making up a tenth of the load is picked about a
// tenth of the time. Each pick's weight is the number of requests of one
// pass its stratum holds, so an endpoint's weights sum to its requests per
// pass. Picks come in the order their shapes first appear in the sequence.
func (r *Replayer) explainPicks(perEndpoint int) []explainPick {
	type shape struct {
		order int // first position in the sequence
		count int
	}
	byEndpoint := map[string][]*shape{}
	index := map[shapeKey]*shape{}
	for i := range r.seq.len() {
		t := r.seq.at(i)
		k := shapeOf(t)
		s := index[k]
		if s == nil {
			if len(byEndpoint[t.endpoint]) >= MaxShapes {
				continue
			}
			s = &shape{order: i}
			index[k] = s
			byEndpoint[t.endpoint] = append(byEndpoint[t.endpoint], s)
		}
		s.count++
	}
	weights := map[*shape]float64{}
	for _, shapes := range byEndpoint {
		if len(shapes) <= perEndpoint {
			for _, s := range shapes {
				weights[s] = float64(s.count)
			}
			continue
		}
		sorted := slices.Clone(shapes)
		slices.SortStableFunc(sorted, func(a, b *shape) int { return cmp.Compare(b.count, a.count) })
		total := 0
		for _, s := range sorted {
			total += s.count
		}
		step := float64(total) / float64(perEndpoint)
		i, upTo := 0, float64(sorted[0].count)
		for k := range perEndpoint {
			at := (float64(k) + 0.5) * step
			for at >= upTo && i < len(sorted)-1 {
				i++
				upTo += float64(sorted[i].count)
			}
			weights[sorted[i]] += step
		}
	}
	picks := make([]*shape, 0, len(weights))
	for s := range weights {
		picks = append(picks, s)
	}
	slices.SortFunc(picks, func(a, b *shape) int { return cmp.Compare(a.order, b.order) })
	out := make([]explainPick, len(picks))
	for i, s := range picks {
		out[i] = explainPick{t: r.seq.at(s.order), weight: weights[s]}
	}
	return out
}

// ExplainWeights returns, for each recorded exchange the explain phase
// replays with perEndpoint requests per endpoint, how many requests of one
// pass of the request sequence it stands for (see Explain); store them in
// the run file (snapshots.RunInfo.ExplainWeights) so the analyzer weights
// the explain figures by the load's mix. Nil when perEndpoint is not
// positive, or when two picks share an exchange ID (weights could not be
// told apart).
func (r *Replayer) ExplainWeights(perEndpoint int) map[int64]float64 {
	if perEndpoint <= 0 {
		return nil
	}
	w := map[int64]float64{}
	for _, p := range r.cfg.Shard.shardPicks(r.explainPicks(perEndpoint)) {
		if _, dup := w[p.t.id]; dup {
			return nil
		}
		w[p.t.id] = p.weight
	}
	return w
}
