package recorder

import (
	"context"
	"hash/fnv"
	"net"
	"net/http"
	"sync/atomic"
)

// The client connection of an inbound request (snapshots.Exchange.ClientConn):
// replay takes the requests of one connection for one client when it
// correlates them.

// connIDKey is the context key of a connection's id (ConnContext).
type connIDKey struct{}

// lastConnID numbers the connections the inbound proxies accept.
var lastConnID atomic.Int64

// ConnContext is an http.Server's ConnContext that numbers the connections
// it accepts, so that the inbound recorder can tell which requests came on
// one connection (HTTP/2 streams of one connection share it).
func ConnContext(ctx context.Context, _ net.Conn) context.Context {
	return context.WithValue(ctx, connIDKey{}, lastConnID.Add(1))
}

// clientConn is the id of the connection r came on: ConnContext's, else
// (a server without it) a hash of the client's address and port.
func clientConn(r *http.Request) int64 {
	if id, ok := r.Context().Value(connIDKey{}).(int64); ok {
		return id
	}
	if r.RemoteAddr == "" {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(r.RemoteAddr))
	return int64(h.Sum64()>>1) | 1 // positive and never zero
}
