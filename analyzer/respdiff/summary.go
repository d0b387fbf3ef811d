package respdiff

// Summary compares one endpoint's answers.
type Summary struct {
	// Compared counts the answers compared: Sampled and Hashed.
	Compared int64 `json:"compared"`
	// Sampled counts the answers compared field by field.
	Sampled int64 `json:"sampled"`
	// Hashed counts the answers beyond the sample compared by hash.
	Hashed int64 `json:"hashed"`
	// HashedOneIn, above 1, says those were the answers to 1 in that many
	// of the exchanges replayed (a run of more than MaxHashedRows
	// counts), chosen by exchange alike on both sides.
	HashedOneIn int64 `json:"hashed_one_in,omitempty"`
	// Differing counts the answers with a difference neither ignored nor
	// accepted.
	Differing int64 `json:"differing"`
	// Differences group those differences by path, most answers first.
	Differences []Group `json:"differences"`
	// Ignored lists what was ignored and why: learned noise (whether or
	// not it hid a difference between the builds), rules that hid one.
	Ignored []Ignored `json:"ignored"`
	// Accepted groups the differences --accept-diff names.
	Accepted []Group `json:"accepted,omitempty"`
}

// Group is the differences at one path, of one kind.
type Group struct {
	// Path is the generalised path ($.items[*].id, status, header:NAME…).
	Path string `json:"path"`
	// Kind is one of the Kind constants.
	Kind string `json:"kind"`
	// Baseline and Candidate describe the first example: number 7,
	// string "7", absent.
	Baseline  string `json:"baseline"`
	Candidate string `json:"candidate"`
	// Count counts the answers with the difference, of Of compared
	// (Sampled, or Hashed for differences found by hash).
	Count int64 `json:"count"`
	Of    int64 `json:"of"`
	// Hashed says the differences were found by hash, beyond the sample.
	Hashed bool `json:"hashed,omitempty"`
	// Example is the first answer found with it.
	Example Example `json:"example"`
}

// Example points at one answer with a difference.
type Example struct {
	// ExchangeID is the recorded exchange replayed.
	ExchangeID int64 `json:"exchange_id"`
	// Path is the difference's concrete path ($.items[3].id).
	Path string `json:"path"`
	// Diff is a short unified diff of the two bodies ("-" reference, "+"
	// answer compared), JSON indented; "" when not shown.
	Diff string `json:"diff,omitempty"`
}

// Ignored is a path whose differences are ignored.
type Ignored struct {
	// Path is the path (or the rule's).
	Path string `json:"path"`
	// Reason says why: learned noise, a rule, a redacted recording.
	Reason string `json:"reason"`
	// Count counts the answers compared in which it hid a difference.
	Count int64 `json:"count"`
}

// Reasons of Ignored.
const (
	ReasonBaseline  = "varies between the baseline's answers to the same request"
	ReasonRecording = "differs between the recording and the baseline"
	ReasonBuild     = "varies between the build's answers to the same request"
	ReasonCandidate = "varies between the candidate's answers to the same request, one of them as the baseline's"
	ReasonRedacted  = "redacted in the recording"
	ReasonRule      = "--ignore"
)
