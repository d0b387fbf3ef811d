package listen

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
)

// WarnLogger returns a logger that hands each warning (and error) to warn
// as one error, "message key=value ...", for a caller that reports
// warnings as errors (session.Config.Warn); nil warn discards.
func WarnLogger(warn func(error)) *slog.Logger {
	if warn == nil {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(warnHandler{warn})
}

type warnHandler struct{ warn func(error) }

func (h warnHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h warnHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	h.warn(errors.New(b.String()))
	return nil
}

func (h warnHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h warnHandler) WithGroup(string) slog.Handler      { return h }
