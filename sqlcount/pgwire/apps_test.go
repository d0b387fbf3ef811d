package pgwire

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
)

// TestStatsClients: the proxy counts connections and statements per
// application_name, given as PGAPPNAME (which pgx honours, as libpq does)
// or in the URL, so a caller can tell which build used it.
func TestStatsClients(t *testing.T) {
	tp, url, _ := proxied(t)
	ctx := context.Background()
	t.Setenv("PGAPPNAME", "replay-baseline")
	a1 := connect(t, url, pgx.QueryExecModeCacheStatement)
	a2 := connect(t, url, pgx.QueryExecModeSimpleProtocol)
	b := connect(t, url+"&application_name=replay-candidate", pgx.QueryExecModeCacheStatement)
	t.Setenv("PGAPPNAME", "")
	none := connect(t, url, pgx.QueryExecModeCacheStatement)
	for i, c := range []*pgx.Conn{a1, a1, a2, b, b, b, none} {
		if _, err := c.Exec(ctx, "SELECT 1"); err != nil {
			t.Fatalf("statement %d: %v", i, err)
		}
	}
	st := tp.Stats()
	want := []ClientStats{
		{App: "", Connections: 1, Statements: 1},
		{App: "replay-baseline", Connections: 2, Statements: 3},
		{App: "replay-candidate", Connections: 1, Statements: 3},
	}
	if diff := cmp.Diff(want, st.Clients); diff != "" || st.Connections != 4 || st.Statements != 7 {
		t.Errorf("Connections %d, Statements %d; clients (-want +got):\n%s", st.Connections, st.Statements, diff)
	}
}

func TestStartupApp(t *testing.T) {
	for _, tt := range []struct {
		name string
		msg  []byte
		want string
	}{
		{"named", startupBytes(t, map[string]string{"user": "u", "application_name": "replay-candidate"}), "replay-candidate"},
		{"none", startupBytes(t, map[string]string{"user": "u"}), ""},
		{"short", []byte{0, 0, 0, 8}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := startupApp(tt.msg); got != tt.want {
				t.Errorf("startupApp = %q, want %q", got, tt.want)
			}
		})
	}
}

func startupBytes(t *testing.T, params map[string]string) []byte {
	t.Helper()
	b, err := (&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: params}).Encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
