// Package snapshots is replay's shared vocabulary and on-disk format.
//
// It defines the data model — Exchange (a recorded request and response),
// Statement (one SQL statement the database completed) and Result (one
// replayed request) — and stores them in SQLite files through
// modernc.org/sqlite (pure Go): snapshots (what a recording captured) and run
// files (what a replay measured). Every file records its kind and format
// version in a meta table; Open and OpenRun refuse files that are not ours
// (ErrNotSnapshot) or of another version (ErrVersion), naming the file. Old
// versions are upgraded here and nowhere else.
//
// Writing: Create returns a Writer whose AddExchange and AddStatement queue
// records for a goroutine that inserts them with prepared statements in
// transactions of up to Options.BatchSize records, committed at least every
// Options.FlushInterval (one second by default) in WAL mode. A process killed
// with SIGKILL keeps all but the last second; a full queue makes producers
// wait, so no record is ever dropped. Writer.NewID reserves an exchange ID
// when a request starts, so that outbound calls and statements can name it
// before it completes. The file can be read (Open) while it is written.
// CreateRun and RunWriter do the same for replay results, which a run file
// stores packed, many to a row (see runcodec.go): a run of millions of
// results is written and read at a microsecond or two per result.
//
// Reading streams: Snapshot.Exchanges, Snapshot.Statements and Run.Results
// are iterators over database rows, so files of millions of records are read
// in bounded memory. Inspect summarizes a snapshot per endpoint.
//
// Endpoint computes endpoint templates ("GET /orders/{id}"): path segments
// that are numbers, UUIDs, long hex or id-like tokens become {id}, and the
// user's rules (ParseRule) win; IsUUID is its UUID test, which the mock
// shares. EndpointOf adds the operation an inbound request names to its
// endpoint ("POST /graphql {allBooks}"): a GraphQL operation, or the value
// a body rule (ParseBodyRule, "json:$.method") picks from a JSON body. ExportJSONL/ImportJSONL and
// ExportHAR/ImportHAR convert snapshots to and from JSON Lines and HAR 1.2
// losslessly; ImportHAR also reads the HAR files of Chrome and Firefox.
// Export and Import pick one by Format (FormatOf reads it from a file name);
// ExportFile writes a file whole or not at all, and Writer.CloseOrRemove
// leaves no snapshot behind when what filled it failed.
//
// HTTP/1.1, HTTP/2 and gRPC share the one Exchange. An HTTP/2 exchange says
// so in Proto ("HTTP/2.0"; Exchange.Transport tells h2 from h2c). A gRPC
// call (Exchange.IsGRPC) keeps every message of its stream, both sides', in
// order with its time (Exchange.Messages, Message) and its trailers
// (Exchange.ResponseTrailer); its endpoint is its method,
// "gRPC route.RoutesService/FindRoute" (GRPCEndpoint, GRPCMethod), and its
// status grpc-status (Exchange.GRPCStatus). Format version 2 added them;
// version 1 files read with none. Format version 3 added the client
// connection of an inbound request (Exchange.ClientConn); older files read
// it as zero, unknown.
//
// It imports nothing else of replay's, and does no networking.
package snapshots
