package report

import "github.com/replaykit/replay/analyzer"

// DetectableDocument is a smallest detectable change: as a ratio (1.15 is
// 15%) and in milliseconds of the baseline percentile.
type DetectableDocument struct {
	Ratio float64 `json:"ratio"`
	Ms    float64 `json:"ms"`
}

// ChangeDocument compares one percentile: the figures the verdict rests
// on, which every format shows. Basis says what they are computed over.
type ChangeDocument struct {
	BaselineMs  float64          `json:"baseline_ms"`
	CandidateMs float64          `json:"candidate_ms"`
	DeltaMs     float64          `json:"delta_ms"`
	Ratio       float64          `json:"ratio"`
	CI          [2]float64       `json:"ci"`
	Disjoint    bool             `json:"disjoint"`
	Verdict     analyzer.Verdict `json:"verdict"`
	Method      string           `json:"method"`
	// Basis is BasisAllRequests when the figures are the sides' own over
	// all their requests (baseline.p95_ms…), BasisKeptPairs when they leave
	// out the slice pairs set aside (set_aside) and so differ from those.
	Basis string `json:"basis"`
}

func detectableDoc(ch analyzer.Change) *DetectableDocument {
	if ch.MinDetectable == 0 {
		return nil
	}
	return &DetectableDocument{Ratio: round(ch.MinDetectable, 4), Ms: round(ch.MinDetectableMs(), 3)}
}

func changeDoc(ch analyzer.Change) ChangeDocument {
	return ChangeDocument{
		BaselineMs: round(ch.Baseline, 3), CandidateMs: round(ch.Candidate, 3), DeltaMs: round(ch.Delta, 3), Ratio: round(ch.Ratio, 4),
		CI: [2]float64{round(ch.CILow, 4), round(ch.CIHigh, 4)}, Disjoint: ch.Disjoint, Verdict: ch.Verdict, Method: ch.Method, Basis: basis(ch),
	}
}
