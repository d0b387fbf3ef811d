package session

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/analyzer/respdiff"
	"github.com/replaykit/replay/internal/redact"
	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/snapshots"
)

// ResponseCapture says how each side keeps its build's answers in its run
// file, for the comparison of behaviour (see replayer.Config.Responses).
// The zero value keeps them with the replayer's defaults.
type ResponseCapture struct {
	// Off keeps no answers: the run file holds no responses to compare.
	Off bool
	// SampleExchanges is the number of recorded exchanges sampled per
	// endpoint; zero means replayer.DefaultSampleExchanges.
	SampleExchanges int
	// SampleBody is the most decoded body bytes a sample keeps; zero means
	// replayer.DefaultSampleBody.
	SampleBody int
	// Headers are kept on top of replayer.DefaultResponseHeaders (headers
	// a comparison is told to look at).
	Headers []string
	// Messages decodes gRPC answers' messages (protobuf) for comparison;
	// nil decodes them by field number.
	Messages replayer.MessageDecoder
	// Reflect asks each target's gRPC server reflection for its schema
	// once it is up, and decodes with it rather than Messages; the schema
	// is kept beside the run file (ProtosetSuffix) for reports.
	Reflect bool
}

// apply sets the capture of rc on cfg, the answers going to the run file
// rw will hold, redacted as the snapshot at snap.
func (rc ResponseCapture) apply(cfg *replayer.Config, rw *runResponses, snap string) {
	if rc.Off {
		return
	}
	rw.red = sampleRedactor(snap)
	cfg.Responses, cfg.SampleExchanges, cfg.SampleBody, cfg.ResponseHeaders = rw, rc.SampleExchanges, rc.SampleBody, rc.Headers
	cfg.Messages = rc.Messages
}

// runResponses hands samples to a side's run file, created after its
// replayer (and before any request is sent), redacted as the snapshot
// replayed was (run files are shared as CI artifacts; and a sample
// compares with a recorded answer only when both hide the same values).
type runResponses struct {
	w   *snapshots.RunWriter
	red *redact.Redactor
}

func (r *runResponses) AddResponse(s *snapshots.ResponseSample) {
	r.w.AddResponse(redactSample(r.red, s))
}

// AddResponseHashes hands the replayer's counts by hash to the run file as
// they fill (replayer.HashSink).
func (r *runResponses) AddResponseHashes(h []snapshots.ResponseHash) { r.w.AddResponseHashes(h) }

// sampleRedactor is the redaction of the snapshot at path (its
// Redaction): none for a snapshot written without one, the default one
// when there is no snapshot to read.
func sampleRedactor(path string) *redact.Redactor {
	snap, err := snapshots.Open(path)
	if err != nil {
		return redact.New(redact.Config{})
	}
	defer snap.Close()
	desc, err := snap.Redaction()
	cfg, perr := redact.ParseConfig(desc)
	if err != nil || desc == "" || perr != nil {
		cfg = redact.Config{Off: desc == "" && err == nil}
	}
	return redact.New(cfg)
}

// redactSample redacts s in place with red (its body is decoded: its
// Content-Encoding is not the body's) and returns it.
func redactSample(red *redact.Redactor, s *snapshots.ResponseSample) *snapshots.ResponseSample {
	h := s.Header
	enc, encoded := h["Content-Encoding"]
	if encoded {
		h = h.Clone()
		delete(h, "Content-Encoding")
	}
	e := &snapshots.Exchange{Direction: snapshots.Inbound, ResponseHeader: h, ResponseBody: s.Body, ResponseBodySize: s.BodySize}
	red.Redact(e)
	s.Body, s.BodySize = e.ResponseBody, e.ResponseBodySize
	if encoded {
		e.ResponseHeader["Content-Encoding"] = enc
	}
	s.Header = e.ResponseHeader
	return s
}

// writeHashes adds the answers the side's replayer counted by hash to its
// run file.
func (s *Side) writeHashes() {
	if s.rp != nil && s.run != nil {
		s.run.AddResponseHashes(s.rp.ResponseHashes())
	}
}

// SettingResponseRules is the run file setting of the rules the answers
// are compared with (respdiff.Rules in JSON), so that comparing the run
// files again (report DIR, compare RUN_A RUN_B) applies them too.
const SettingResponseRules = "response_rules"

// recordRules records r in the settings s, when it holds a rule.
func recordRules(s map[string]string, r respdiff.Rules) {
	if r.IsZero() {
		return
	}
	if b, err := json.Marshal(r); err == nil {
		s[SettingResponseRules] = string(b)
	}
}

// recordedRules adds the rules info recorded to r: rules given again add
// to those a comparison was made with.
func recordedRules(info snapshots.RunInfo, r respdiff.Rules) (respdiff.Rules, error) {
	v := info.Settings[SettingResponseRules]
	if v == "" {
		return r, nil
	}
	var rec respdiff.Rules
	if err := json.Unmarshal([]byte(v), &rec); err != nil {
		return r, fmt.Errorf("%s recorded in the %s run: %w", SettingResponseRules, info.Name, err)
	}
	return respdiff.Rules{Ignore: merged(rec.Ignore, r.Ignore), IgnoreHeaders: merged(rec.IgnoreHeaders, r.IgnoreHeaders),
		Unordered: merged(rec.Unordered, r.Unordered), Accept: merged(rec.Accept, r.Accept), Headers: merged(rec.Headers, r.Headers)}, nil
}

func merged(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// withRecording gives opts the snapshot of the run info, when it can be read, as
// the recording's answers (analyzer.CompareOptions.Recorded): what differs
// between them and the baseline's is noise too. The function returned
// closes it.
func withRecording(ctx context.Context, info snapshots.RunInfo, opts analyzer.CompareOptions) (analyzer.CompareOptions, func()) {
	path := info.Snapshot
	if opts.Recorded != nil || path == "" || !fileExists(path) {
		return opts, func() {}
	}
	snap, err := snapshots.Open(path)
	if err != nil {
		return opts, func() {}
	}
	opts.Recorded = grpcAnswers{snap, messageDecoder(ctx, info.Settings)}
	return opts, func() { snap.Close() }
}

// SettingCheckResponses is the run file setting of a run whose answers
// were compared with the recording (RunConfig.CheckResponses): "true".
const SettingCheckResponses = "check_responses"

// checkSettings records in s that the run's answers are checked, and the
// rules they are checked with.
func checkSettings(s map[string]string, check bool, rules respdiff.Rules) {
	if check {
		s[SettingCheckResponses] = "true"
		recordRules(s, rules)
	}
}

// checkResponses compares the answers the run file at path captured with
// the recorded answers of the snapshot snap (analyzer.CheckResponses);
// nil when the run kept none.
func checkResponses(ctx context.Context, snap string, run analyzer.RunSource, rules respdiff.Rules) (*analyzer.ResponseCheck, error) {
	s, err := snapshots.Open(snap)
	if err != nil {
		return nil, fmt.Errorf("check responses: %w", err)
	}
	defer s.Close()
	return analyzer.CheckResponses(ctx, run, grpcAnswers{s, messageDecoder(ctx, run.Info().Settings)}, rules)
}

// checkRunFile is checkResponses of the run file at path; lone counts the
// sampled requests the build answered once, of sampled (see lonely).
func checkRunFile(ctx context.Context, snap, path string, rules respdiff.Rules) (rc *analyzer.ResponseCheck, lone [2]int, err error) {
	run, err := snapshots.OpenRun(path)
	if err != nil {
		return nil, lone, err
	}
	defer run.Close()
	if rc, err = checkResponses(ctx, snap, run, rules); err != nil {
		return nil, lone, err
	}
	answers := map[int64]int{}
	err = run.Responses(func(s *snapshots.ResponseSample) error {
		answers[s.ExchangeID]++
		return nil
	})
	for _, n := range answers {
		if n < 2 {
			lone[0]++
		}
	}
	lone[1] = len(answers)
	return rc, lone, err
}

// lonely says, when some sampled requests were answered once, that what
// varies between a build's answers could not be learned for them; "" when
// every one was answered twice.
func lonely(lone [2]int) string {
	if lone[0] == 0 {
		return ""
	}
	return fmt.Sprintf("%d of the %d requests whose answers were compared with the recording were answered once: "+
		"what varies on its own (timestamps, ids) could not be learned for them; replay each request twice "+
		"(--iterations 2, or the explain phase of --postgres) before trusting their differences", lone[0], lone[1])
}

// recheck compares again the answers of a run checked against its
// recording (SettingCheckResponses), with the rules it was checked with
// and rules; nil when it was not checked, or when no rules are given and
// its snapshot is gone (rules given need the snapshot: an error).
func recheck(ctx context.Context, run *snapshots.Run, rules respdiff.Rules) (*analyzer.ResponseCheck, error) {
	info := run.Info()
	if info.Settings[SettingCheckResponses] != "true" && rules.IsZero() {
		return nil, nil
	}
	if !fileExists(info.Snapshot) && rules.IsZero() {
		return nil, nil
	}
	rules, err := recordedRules(info, rules)
	if err != nil {
		return nil, err
	}
	return checkResponses(ctx, info.Snapshot, run, rules)
}
