// Package rawsock takes sockets out of Go's network poller for the event
// loops that drive them with their own epoll set (the SQL counter's relay,
// the replayer's closed model on Linux).
package rawsock
