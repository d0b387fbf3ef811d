// Package conntrack keeps the connections a forward proxy has hijacked (its
// CONNECT tunnels and upgrades), so that closing the proxy can end them:
// http.Server.Shutdown does not wait for hijacked connections, which live
// until the client closes them.
//
// A Set holds the connections; Writer wraps the http.ResponseWriter handed
// to the handler that hijacks (goproxy), putting what it hijacks in the Set.
// Both mock.Server and recorder.Outbound use it.
//
// An intercepted tunnel carries HTTP requests that goproxy reads itself,
// beyond http.Server's timeouts: Timeouts and Watch bound its handshake,
// request headers and idle waits in the same way.
//
// It does not limit or count connections, and closing a Set does not stop
// the proxy from accepting requests: the proxy checks Closed.
package conntrack
