package session

import (
	"context"
	"iter"
	"strings"

	"github.com/replaykit/replay/pbdecode"
	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/snapshots"
)

// Run file settings naming the schema a run's gRPC answers were decoded
// with (ResponseCapture.Messages): the --proto files and import paths,
// absolute, one per line.
const (
	SettingProto     = "proto"
	SettingProtoPath = "proto_path"
)

// messageDecoder returns the decoder a run's settings name: with the
// schema of its --proto files, else by field number (also when the files
// cannot be read any more).
func messageDecoder(ctx context.Context, settings map[string]string) replayer.MessageDecoder {
	files := lines(settings[SettingProto])
	if len(files) == 0 {
		return &pbdecode.Decoder{}
	}
	s, err := pbdecode.LoadFiles(ctx, files, lines(settings[SettingProtoPath]))
	if err != nil {
		return &pbdecode.Decoder{}
	}
	return &pbdecode.Decoder{Schema: s}
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// grpcAnswers is a recording whose gRPC calls' answers read as the JSON
// documents the replayer compares (replayer.GRPCAnswer), so that the
// recording is compared with a build's answers as JSON is.
type grpcAnswers struct {
	snap *snapshots.Snapshot
	dec  replayer.MessageDecoder
}

// Exchange returns exchange id, a gRPC call's answer as its document.
func (g grpcAnswers) Exchange(ctx context.Context, id int64) (*snapshots.Exchange, error) {
	e, err := g.snap.Exchange(ctx, id)
	if err != nil {
		return nil, err
	}
	return replayer.GRPCAnswer(e, g.dec), nil
}

// Exchanges yields the exchanges f selects, gRPC calls' answers as their
// documents.
func (g grpcAnswers) Exchanges(ctx context.Context, f snapshots.Filter) iter.Seq2[*snapshots.Exchange, error] {
	return func(yield func(*snapshots.Exchange, error) bool) {
		for e, err := range g.snap.Exchanges(ctx, f) {
			if err == nil {
				e = replayer.GRPCAnswer(e, g.dec)
			}
			if !yield(e, err) {
				return
			}
		}
	}
}
