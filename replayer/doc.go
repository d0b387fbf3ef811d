// Package replayer drives recorded traffic against one target under a load
// model, and starts and stops the builds it replays against.
//
// # Replaying
//
// New takes the snapshot's inbound exchanges (Config.Exchanges), the target's
// base URL and what to add (Config.Header), and prepares every request once:
// method, path, query, headers and body as recorded, the target's host,
// hop-by-hop headers dropped, Content-Length from the body, redacted header
// values ("[REDACTED]", "Bearer [REDACTED]") dropped unless Config.Header
// supplies them. Each request
// then gets a fresh W3C traceparent whose trace id lands in Result.TraceID.
// Config.Endpoints filters by endpoint or glob.
//
// (*Replayer).Run sends requests under a LoadPlan and hands every result to
// a ResultSink (*snapshots.RunWriter is one) as it completes; nothing is held,
// so memory stays bounded however many requests a run sends. The models:
//
//   - closed (VUs, Stages): each virtual user sends the next request of the
//     sequence as soon as its previous one is answered; Stages ramp the users
//     linearly, k6-style;
//   - open (Rate): requests start at fixed intended times whatever the target
//     does; Result.Intended is that time, so Result.Latency counts from it and
//     a slow target cannot hide behind a slowed-down generator (coordinated
//     omission). A bounded pool of at most Config.MaxInFlight workers sends
//     them, so a stalled target cannot make the generator open thousands of
//     connections. Requests go out within tens of microseconds of their
//     intended start on Linux with two or more Ps: the scheduler sleeps the
//     last stretch with nanosleep, not a Go timer (which may fire a
//     millisecond late), and writes each request on an idle worker's
//     connection itself (wait.go, openworker.go);
//   - as recorded (Speed): requests start at their recorded offsets divided
//     by Speed.
//
// Duration and Iterations bound every model. Run can be called repeatedly on
// one Replayer: the position in the request sequence carries over, which is
// how a comparison replays the same requests to two builds in alternating
// slices (LoadPlan.Slice is stamped on every result).
//
// # A stalled target
//
// In the open model a target that stops answering holds every worker; the
// requests due meanwhile wait and go out late, their latency still counted
// from their intended start (Stats.Late, Stats.MaxLate; Progress.Behind while
// it lasts). Requests that still cannot be sent when the run's end plus
// Config.Timeout has passed become failed results with Error "not sent:
// target stalled", Sent and Done the moment replay gave up (Stats.NotSent).
// Requests sent but not answered within Config.Timeout fail with an error
// starting "timeout:".
//
// # SQL per request
//
// With a Config.SQL counter (*sqlcount.Proxy), Begin and End bracket every
// request and Result.SQL holds the statements attributed to it. Attribution
// is exact when the app propagates traceparent into its SQL comments
// (Config.SQLTraced) or when one request is in flight; so Result.SQLCounted is
// set only for requests that had the target to themselves, and the explain
// phase (LoadPlan.Explain, or Explain) replays a few requests of every
// endpoint one at a time, Phase "explain", before the load.
//
// # The HTTP client
//
// For http:// targets each worker owns one keep-alive HTTP/1.1 connection
// and writes each request as one pre-built byte string (h1.go): it costs a
// fraction of net/http's CPU per request, which matters because the generator
// shares the machine with the build it measures (docs/benchmarks.md). https
// targets, and Config.NetHTTP, use net/http with a transport sized to the
// concurrency, compression off and no proxy from the environment.
//
// On Linux the closed model runs on event loops (evloop_linux.go,
// evloop_closed_linux.go), as wrk does: one per P but one (at least one;
// REPLAY_LOOPS sets another number), each owning its share of the virtual
// users' connections as raw non-blocking sockets in its own epoll set. A user's
// next request is written as soon as its previous answer is complete, the
// answer is parsed as h1read.go does (evloop_parse.go: same checks, limits
// and errors), and each request's deadline is kept by the loop (epoll_wait
// waits at most until the nearest): a write, a read and a share of one
// epoll_wait per request, and no goroutine parked or woken. Results go to
// the sink, answers to the capture, as on the goroutine path. Dialing is
// done by a goroutine, and so is a request met in the sequence that was
// recorded over HTTP/2. The goroutine path (a goroutine per virtual user,
// h1.go) still runs the closed model for an https target, Config.NetHTTP,
// stages (a ramp of virtual users), a stage rewriting requests
// (Config.State: tokens, correlation, shifted times), a SQL or upstream
// counter (Config.SQL, Config.Upstream), requests recorded over HTTP/2
// (gRPC among them: any in Config.Exchanges, the first of an endpoint in a
// Source), any other OS,
// and REPLAY_EVLOOP=off.
//
// Under the same conditions the open and as-recorded models run on one event
// loop too (evloop_open_linux.go): it schedules every arrival as dispatch
// does (open.go), waits in epoll_pwait2 (a timeout in nanoseconds, with the
// thread's timer slack cut to 1ns) until the next intended start, never
// before it (or until the last of those due within 50µs of it, to send them
// at one wake-up: waking is most of what a request costs the loop), and
// writes the request on an idle connection, on a new one
// while there are fewer than MaxInFlight, or else holds it until one is
// free; held, late and stalled requests ("not sent: target stalled") are
// counted as on the goroutine path (open.go, openworker.go), which runs them
// otherwise, and also on a kernel without epoll_pwait2 (before Linux 5.11).
// Where they differ: a closed-model loop's deadline is the request's timeout
// rounded up to the millisecond (the open loop's is not rounded; the
// goroutine path's may be up to 0.1% later), and
// bytes arriving after a complete answer close the connection instead of
// being read as the next answer.
//
// Requests recorded over HTTP/2 go over HTTP/2 (h2.go), whatever the load
// model: h2c with prior knowledge to an http:// target, h2 by ALPN to an
// https:// one, as streams over Config.Conns connections. Its client
// (h2direct.go, h2conn.go, h2read.go) writes each template's HEADERS
// encoded once and the frames of every stream queued meanwhile in one
// write, and reads frames with golang.org/x/net/http2's Framer: per call
// it costs well under x/net/http2's transport, which Config.NetHTTP keeps. A
// gRPC call (grpc.go) sends its client messages framed as recorded, ends at
// its recorded deadline (DEADLINE_EXCEEDED) or recorded cancel (CANCELLED)
// as a gRPC client would, reads the server's messages and trailers, and
// sets Result.GRPC and its statuses: it failed when its grpc-status is not
// the recorded one. A sampled gRPC answer is captured as a JSON document,
// its messages decoded from protobuf by Config.Messages (grpcsample.go), so
// that answers are compared as JSON ones are; GRPCAnswer gives a recorded
// call's answer the same form. The stage (StateConfig) rewrites their
// headers as it does HTTP/1.1 ones (stage_h2.go).
//
// # Builds
//
// StartBuild starts a build given as a shell command after replay's own
// proxies listen, with Wiring.Environ's environment (PORT, the mock as
// HTTP_PROXY/HTTPS_PROXY, the CA bundle, the database address rewritten to
// the SQL counter), waits until it answers HTTP, keeps its output in a log,
// and (*Process).Stop ends its process group (SIGTERM, then SIGKILL).
//
// It does not read flags or the environment (cmd/replay does), does not mock
// upstreams or count SQL itself (package mock and package sqlcount, wired in
// through the small interfaces declared here), and does not analyze results
// (package analyzer).
package replayer
