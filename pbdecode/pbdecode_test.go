package pbdecode

import (
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/replaykit/replay/snapshots"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/interop"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/reflection"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

func marshal(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func jsonOf(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRaw decodes a real message without its schema: numbers, text,
// nested messages, repeated fields and binary bytes.
func TestRaw(t *testing.T) {
	req := &testpb.StreamingOutputCallRequest{
		ResponseType:       testpb.PayloadType_COMPRESSABLE,
		ResponseParameters: []*testpb.ResponseParameters{{Size: 31415}, {Size: 9, IntervalUs: 7}},
		Payload:            &testpb.Payload{Body: []byte{0, 1, 2, 0xff}},
		ResponseStatus:     &testpb.EchoStatus{Code: 2, Message: "test status message"},
	}
	tree, err := Raw(marshal(t, req))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"2":[{"1":"31415"},{"1":"9","2":"7"}],"3":{"2":"AAEC/w=="},"7":{"1":"2","2":"test status message"}}`
	want = strings.NewReplacer(`"31415"`, `31415`, `"9"`, `9`, `"7"}`, `7}`, `"2","2"`, `2,"2"`).Replace(want)
	if got := jsonOf(t, tree); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	fields, err := Fields(marshal(t, req))
	if err != nil || len(fields) != 4 || fields[0].Number != 2 || fields[0].Type != protowire.BytesType {
		t.Errorf("fields %+v %v", fields, err)
	}
	for _, bad := range [][]byte{{0x08}, {0x0a, 0x05, 'a'}, {0x07}, {0x00}} {
		if _, err := Raw(bad); err == nil {
			t.Errorf("%x decoded", bad)
		}
	}
	if tree, err := Raw(nil); err != nil || len(tree) != 0 {
		t.Errorf("empty message: %v %v", tree, err)
	}
	g := protowire.AppendTag(nil, 5, protowire.StartGroupType)
	g = protowire.AppendTag(g, 1, protowire.VarintType)
	g = protowire.AppendVarint(g, 3)
	g = protowire.AppendTag(g, 5, protowire.EndGroupType)
	if tree, err := Raw(g); err != nil || jsonOf(t, tree) != `{"5":{"1":3}}` {
		t.Errorf("group: %v %v", tree, err)
	}
}

// TestSchemaFromProto compiles a .proto with an import and decodes with
// names; a field the schema lacks is kept by number.
func TestSchemaFromProto(t *testing.T) {
	s, err := LoadFiles(context.Background(), []string{filepath.Join("testdata", "route.proto")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"route.RoutesService"}, s.Services()); diff != "" {
		t.Error(diff)
	}
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendString(b, "Lisbon")
	b = protowire.AppendTag(b, 3, protowire.VarintType)
	b = protowire.AppendVarint(b, 313000)
	b = protowire.AppendTag(b, 4, protowire.VarintType)
	b = protowire.AppendVarint(b, 2)
	b = protowire.AppendTag(b, 99, protowire.VarintType)
	b = protowire.AppendVarint(b, 1)
	d := &Decoder{Schema: s}
	got, err := d.JSON("/route.RoutesService/FindRoute", snapshots.FromServer, b)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"99":1,"meters":"313000","mode":"BIKE","name":"Lisbon"}`; string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	req, err := d.JSON("/route.RoutesService/FindRoute", snapshots.FromClient, b[:8])
	if err != nil || string(req) != `{"from":"Lisbon"}` {
		t.Errorf("request: %s %v", req, err)
	}
	if raw, err := d.JSON("/other.Svc/M", snapshots.FromServer, b[:8]); err != nil || string(raw) != `{"1":"Lisbon"}` {
		t.Errorf("unknown method: %s %v", raw, err)
	}
	if _, err := LoadFiles(context.Background(), []string{filepath.Join("testdata", "nope.proto")}, nil); err == nil {
		t.Error("a missing .proto loaded")
	}
}

// TestFetchSchema asks grpc-go's interop server, with reflection on, for
// its schema: TestService's messages then decode with names.
func TestFetchSchema(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	testgrpc.RegisterTestServiceServer(srv, interop.NewTestServer())
	reflection.Register(srv)
	go srv.Serve(l)
	defer srv.Stop()
	cc, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	s, err := FetchSchema(context.Background(), cc)
	if err != nil {
		t.Fatal(err)
	}
	d := &Decoder{Schema: s}
	msg := marshal(t, &testpb.SimpleRequest{ResponseSize: 314159, FillUsername: true})
	got, err := d.JSON("/grpc.testing.TestService/UnaryCall", snapshots.FromClient, msg)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"fill_username":true,"response_size":314159}`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
	ms := []snapshots.Message{
		{From: snapshots.FromClient, Data: msg, Size: int64(len(msg))},
		{From: snapshots.FromServer, Data: []byte{1}, Size: 9},
		{From: snapshots.FromServer, Data: []byte{1}, Size: 1, Compressed: true, Encoding: "zstd"},
	}
	if got := jsonOf(t, d.Messages("/grpc.testing.TestService/UnaryCall", snapshots.FromServer, ms)); got != `["AQ==",{"encoding":"zstd","size":1}]` {
		t.Errorf("server messages %s", got)
	}
}

func FuzzRaw(f *testing.F) {
	f.Add([]byte{0x0a, 0x03, 'a', 'b', 'c', 0x10, 0x01})
	f.Add([]byte{0x2b, 0x08, 0x01, 0x2c})
	f.Fuzz(func(t *testing.T, b []byte) {
		tree, err := Raw(b)
		if err != nil {
			return
		}
		if _, err := json.Marshal(tree); err != nil {
			t.Fatalf("tree of %x does not encode: %v", b, err)
		}
	})
}
