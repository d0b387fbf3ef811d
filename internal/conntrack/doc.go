// Package conntrack keeps the connections a forward proxy has hijacked (its
// CONNECT tunnels and upgrades), so that closing the proxy can end them:
// http.Server.Shutdown does not wait for hijacked connections, which live
// until the client closes them.
//
// A Set holds the connections; Writer wraps the http.ResponseWriter handed
// to the handler that hijacks (goproxy), putting what it hijacks in the Set.
// Both mock.Server and recorder.Outbound use it.
//
// It does not limit, time out or count connections, and closing a Set does
// not stop the proxy from accepting requests: the proxy checks Closed.
package conntrack
