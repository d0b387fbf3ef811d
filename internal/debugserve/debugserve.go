// Package debugserve serves Go's runtime profiles (net/http/pprof) when the
// environment asks for it, to find where a long-running replay process
// spends its memory or time. The replay command imports it for its side
// effect; nothing is served unless REPLAY_PPROF is set.
//
//	REPLAY_PPROF=127.0.0.1:6060 replay record …
//	go tool pprof http://127.0.0.1:6060/debug/pprof/heap
//
// An address without a host means loopback, as for every listener of
// replay; the chosen address is printed on stderr (":0" picks a port).
package debugserve

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"time"

	"github.com/replaykit/replay/internal/listen"
)

// Env names the variable holding the address to serve profiles on.
const Env = "REPLAY_PPROF"

func init() {
	if a := os.Getenv(Env); a != "" {
		if err := serve(a); err != nil {
			fmt.Fprintf(os.Stderr, "replay: %s=%s: %v (no profiles served)\n", Env, a, err)
		}
	}
}

// serve starts serving the profiles on addr in the background.
func serve(addr string) error {
	addr, err := listen.Addr(addr)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	fmt.Fprintf(os.Stderr, "replay: profiles on http://%s/debug/pprof/\n", ln.Addr())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return nil
}
