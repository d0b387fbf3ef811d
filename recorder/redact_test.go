package recorder

import (
	"github.com/replaykit/replay/internal/redact"
	"github.com/replaykit/replay/snapshots"
)

// redactingSink applies a Redactor before passing exchanges on, as the
// snapshot writer of a Session does.
type redactingSink struct {
	Sink
	r *redact.Redactor
}

func (s redactingSink) AddExchange(e *snapshots.Exchange) {
	s.r.Redact(e)
	s.Sink.AddExchange(e)
}

// redacting returns sink behind the default redaction plus headers.
func redacting(sink Sink, headers ...string) Sink {
	return redactingSink{sink, redact.New(redact.Config{Headers: headers})}
}
