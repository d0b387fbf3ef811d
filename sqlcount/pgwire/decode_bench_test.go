package pgwire

import (
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/replaykit/replay/snapshots"
)

// BenchmarkDecode measures the decoding and counting work per statement
// (no I/O): a client message stream and the server's answers fed to a
// session, as the relay does.
func BenchmarkDecode(b *testing.B) {
	row := &pgproto3.DataRow{Values: [][]byte{[]byte("1234")}}
	done := &pgproto3.CommandComplete{CommandTag: []byte("SELECT 1")}
	ready := &pgproto3.ReadyForQuery{TxStatus: 'I'}
	cases := []struct {
		name           string
		client, server func(i int) []byte
	}{
		{"simple", func(i int) []byte {
			return encode(&pgproto3.Query{String: fmt.Sprintf("SELECT abalance FROM pgbench_accounts WHERE aid = %d;", i%100000)})
		}, func(int) []byte { return encode(&pgproto3.RowDescription{}, row, done, ready) }},
		{"prepared", func(i int) []byte {
			return encode(&pgproto3.Bind{PreparedStatement: "P_0", Parameters: [][]byte{fmt.Appendf(nil, "%d", i%100000)}},
				&pgproto3.Execute{}, &pgproto3.Sync{})
		}, func(int) []byte { return encode(&pgproto3.BindComplete{}, row, done, ready) }},
	}
	for _, cs := range cases {
		for _, keep := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/OnStatement=%v", cs.name, keep), func(b *testing.B) {
				cfg := Config{Upstream: "127.0.0.1:1"}
				if keep {
					cfg.OnStatement = func(*snapshots.Statement) {}
				}
				s := sessionOf(newProxy(cfg))
				now := time.Now()
				s.client.feed(encode(&pgproto3.Parse{Name: "P_0", Query: "SELECT abalance FROM pgbench_accounts WHERE aid = $1;"}, &pgproto3.Sync{}), now)
				s.server.feed(encode(&pgproto3.ParseComplete{}, ready), now)
				const n = 1024
				clients, servers := make([][]byte, n), make([][]byte, n)
				for i := range n {
					clients[i], servers[i] = cs.client(i), cs.server(i)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					if err := s.client.feed(clients[i%n], now); err != nil {
						b.Fatal(err)
					}
					if err := s.server.feed(servers[i%n], now); err != nil {
						b.Fatal(err)
					}
				}
				if got := statsOf(s).Statements; got != int64(b.N) {
					b.Fatalf("%d statements, want %d", got, b.N)
				}
			})
		}
	}
}
