package hopbyhop

import (
	"net/http"
	"strings"
)

// names are the hop-by-hop headers of RFC 9110 §7.6.1 (and the
// Proxy-Connection and Keep-Alive of older clients), canonical.
var names = [...]string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// Remove deletes from h the headers that its Connection header names, then
// the hop-by-hop headers themselves. h's keys must be canonical.
func Remove(h http.Header) {
	for _, v := range h["Connection"] {
		for _, name := range strings.Split(v, ",") {
			h.Del(strings.TrimSpace(name))
		}
	}
	for _, k := range names {
		delete(h, k)
	}
}
