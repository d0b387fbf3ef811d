package app

import (
	"context"
	"net/http"

	"github.com/jackc/pgx/v5"
)

type traceparentKey struct{}

// validTraceparent reports whether tp has the W3C trace-context form
// (2-32-16-2 lower-case hex digits); anything else is kept out of the SQL,
// so a header cannot close the comment and inject SQL.
func validTraceparent(tp string) bool {
	if len(tp) != 55 {
		return false
	}
	for i := 0; i < len(tp); i++ {
		c := tp[i]
		switch i {
		case 2, 35, 52:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
	}
	return true
}

// withTraceparent keeps the request's traceparent header in its context, for
// the outbound call and the SQL comments.
func withTraceparent(r *http.Request) *http.Request {
	tp := r.Header.Get("traceparent")
	if tp == "" {
		return r
	}
	return r.WithContext(context.WithValue(r.Context(), traceparentKey{}, tp))
}

func traceparent(ctx context.Context) string {
	tp, _ := ctx.Value(traceparentKey{}).(string)
	return tp
}

// sql returns the query and arguments to run for ctx: unchanged, or with a
// sqlcommenter comment naming the request's traceparent when SQLComment is
// on. Commented queries run in exec mode: their text differs per request,
// and caching a prepared statement for each would fill pgx's cache.
func (a *App) sql(ctx context.Context, query string, args ...any) (string, []any) {
	if !a.sqlComment {
		return query, args
	}
	tp := traceparent(ctx)
	if !validTraceparent(tp) {
		return query, args
	}
	return query + " /*traceparent='" + tp + "'*/", append([]any{pgx.QueryExecModeExec}, args...)
}
