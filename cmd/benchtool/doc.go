// Command benchtool measures load generators side by side: it starts one
// local target server, runs each generator against it in turn as a separate
// process, counts the requests at the target and the CPU time of the
// generator process (user + system, from its rusage), and prints a table.
// scripts/bench runs it; docs/benchmarks.md explains the method. It is a
// development tool, not part of the replay release.
//
// Subcommands:
//
//	benchtool compare [flags]   the side-by-side comparison (the default)
//	benchtool loop URL C D      a bare net/http loop: C goroutines, duration D
//	benchtool gen URL C D [-run=FILE] [-cpuprofile=FILE]
//	                            the replayer library, closed model, results
//	                            discarded (or written to a run file)
//	benchtool serve             the target alone; prints its URL
//	benchtool snap FILE         writes the snapshot compare replays (one GET)
//	benchtool bigsnap N FILE    writes a snapshot of N inbound exchanges (about
//	                            700-byte JSON answers) and one outbound call each
//	benchtool app               the app bigsnap's snapshot was recorded from: on
//	                            $PORT, its calls through $HTTP_PROXY (replay's mock)
//	benchtool rss CMD [ARG...]  runs CMD and prints its peak resident memory
//	                            (VmHWM) and wall time
//	benchtool grpc -ghz PATH -replay PATH [-d D] [-c N] [-conns N] [-rounds N]
//	                            replay run of recorded unary gRPC calls beside
//	                            ghz, against one grpc-go server: RPCs per
//	                            generator CPU-second
package main
