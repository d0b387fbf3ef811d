package snapshots

import "errors"

// SchemaVersion is the snapshot file format version this package writes. It
// reads every version from 1 on: version 2 added response trailers and gRPC
// messages, version 3 the client connection of an inbound request
// (Exchange.ClientConn; older files read it as zero, unknown).
const SchemaVersion = 3

// RunSchemaVersion is the run file format version this package writes. It
// reads every version from 1 on: version 2 added SQLCount.Errors and
// RunInfo.StatementErrors (a version 1 file counted the statements the
// server rejected in SQLCount.Count; they read with Errors zero); version 3
// added Result.Upstream and UpstreamCounted (older files read with none);
// version 4 added Result.GRPC and its statuses (older files have no gRPC
// results).
const RunSchemaVersion = 4

// Sentinel errors; wrapped with the file name.
var (
	// ErrNotSnapshot: the file is not a replay snapshot (or run file: its
	// message then says "not a replay run file").
	ErrNotSnapshot = errors.New("not a replay snapshot")
	// ErrVersion: the file's format version is unknown or newer than this
	// build (a run file's says "unsupported run file version").
	ErrVersion = errors.New("unsupported snapshot version")
	// ErrExists: Create was asked to write over an existing file.
	ErrExists = errors.New("file exists")
)
