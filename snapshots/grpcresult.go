package snapshots

import "encoding/binary"

// flagGRPC marks a gRPC result's record: two varints, GRPCStatus and
// RecordedGRPCStatus, follow the upstream counts (run file version 4 on).
const flagGRPC = 1 << 5

// NoGRPCStatus is the GRPCStatus of a gRPC call that ended without one (a
// transport error), and the RecordedGRPCStatus of a recording that has
// none.
const NoGRPCStatus = -1

// grpcFailed reports whether a replayed gRPC call failed: a transport
// error, no status, or a status other than the recorded one (a recorded
// NOT_FOUND that replays as NOT_FOUND is a success). Without a recorded
// status any status but OK fails.
func (r *Result) grpcFailed() bool {
	if r.Error != "" || r.GRPCStatus < 0 {
		return true
	}
	if r.RecordedGRPCStatus < 0 {
		return r.GRPCStatus != 0
	}
	return r.GRPCStatus != r.RecordedGRPCStatus
}

// appendGRPC appends a gRPC result's statuses (see runcodec.go).
func appendGRPC(b []byte, r *Result) []byte {
	if !r.GRPC {
		return b
	}
	b = binary.AppendVarint(b, int64(r.GRPCStatus))
	return binary.AppendVarint(b, int64(r.RecordedGRPCStatus))
}

// grpc reads a gRPC result's statuses.
func (d *resultDecoder) grpc(r *Result) {
	r.GRPC = true
	r.GRPCStatus = int(d.varint())
	r.RecordedGRPCStatus = int(d.varint())
}
