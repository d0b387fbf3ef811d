package replayer

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/replaykit/replay/internal/grpctest"
	"github.com/replaykit/replay/pbdecode"
	"github.com/replaykit/replay/snapshots"
)

// samples collects captured answers.
type samples struct {
	mu sync.Mutex
	s  []*snapshots.ResponseSample
}

func (s *samples) AddResponse(r *snapshots.ResponseSample) {
	s.mu.Lock()
	s.s = append(s.s, r)
	s.mu.Unlock()
}

// TestGRPCAnswersSampledAsJSON: a replayed gRPC call's answer is captured
// as one JSON document, its server messages decoded from protobuf (by
// field number, or by name with a schema) and its status named, for the
// response differ to compare as it compares JSON.
func TestGRPCAnswersSampledAsJSON(t *testing.T) {
	exs, _ := recordInterop(t)
	fds := []*descriptorpb.FileDescriptorProto{protodesc.ToFileDescriptorProto(testpb.File_grpc_testing_empty_proto),
		protodesc.ToFileDescriptorProto(testpb.File_grpc_testing_messages_proto), protodesc.ToFileDescriptorProto(testpb.File_grpc_testing_test_proto)}
	schema, err := pbdecode.NewSchema(fds)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		dec  MessageDecoder
		want string // in the large unary call's answer
	}{
		{"by number", nil, `"messages":[{"1":{"2":"`},
		{"by name", &pbdecode.Decoder{Schema: schema}, `"messages":[{"payload":{"body":"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := grpctest.Start(t, nil)
			var got samples
			r := newReplayer(t, Config{Target: "http://" + srv.Addr, Exchanges: exs, Responses: &got, Messages: c.dec, SampleBody: 1 << 20})
			var s sink
			if _, err := r.Run(context.Background(), LoadPlan{VUs: 1, Iterations: 1}, &s); err != nil {
				t.Fatal(err)
			}
			var large, statusNamed bool
			for _, sm := range got.s {
				var doc map[string]any
				if err := json.Unmarshal(sm.Body, &doc); err != nil {
					t.Errorf("%s: answer not JSON: %v: %.80q", sm.Endpoint, err, sm.Body)
					continue
				}
				if doc["status"] == "INVALID_ARGUMENT" || doc["status"] == "UNKNOWN" {
					statusNamed = true // status_code_and_message's calls
				}
				if strings.HasSuffix(sm.Endpoint, "/UnaryCall") && strings.Contains(string(sm.Body), c.want) && len(sm.Body) > 314159 {
					large = true
				}
			}
			if !large || !statusNamed {
				t.Errorf("large unary answer decoded (%s) %v, an error status named %v; %d samples", c.want, large, statusNamed, len(got.s))
			}
		})
	}
}
