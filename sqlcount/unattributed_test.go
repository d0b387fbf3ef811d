package sqlcount

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestUnattributedKeptOnlyWhenAsked: statements of no request go into the
// per-millisecond histogram only with Config.KeepUnattributed (a replay's
// estimates); a recording's proxy keeps nothing of them, so its memory does
// not grow with its length (the 30-minute soak's live heap grew from 6 to
// 23 MB before).
func TestUnattributedKeptOnlyWhenAsked(t *testing.T) {
	for _, keep := range []bool{false, true} {
		tp, url, _ := proxied(t)
		if keep {
			tp.keepUnattr = true
		}
		conn := connect(t, url, pgx.QueryExecModeSimpleProtocol)
		for range 20 {
			if _, err := conn.Exec(context.Background(), "SELECT 1"); err != nil {
				t.Fatal(err)
			}
		}
		h := tp.Unattributed()
		got := h.Total()
		if keep && got < 20 || !keep && got != 0 {
			t.Errorf("KeepUnattributed %v: %d unattributed statements kept, want %s", keep, got, map[bool]string{false: "0", true: "at least 20"}[keep])
		}
	}
}
