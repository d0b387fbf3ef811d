// Package grpctest runs grpc-go's interop test server (the TestService of
// google.golang.org/grpc/interop, every RPC kind) on loopback for tests,
// counting on the server side what each call did: the truth a recording or
// a mock is checked against. It also runs the interop client's cases.
// Tests only: the release binary does not link it.
package grpctest

import (
	"context"
	"crypto/tls"
	"log"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/interop"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
)

// Call is what the server saw of one call.
type Call struct {
	// Method is the call's path, "/grpc.testing.TestService/UnaryCall".
	Method string
	// Received and Sent count the messages the server read and wrote.
	Received, Sent int
	// Code is the status the handler returned.
	Code int
	// Traceparent is the call's traceparent metadata; "" when it had none.
	Traceparent string
}

// Server is a running interop server.
type Server struct {
	// Addr is its host:port.
	Addr string
	srv  *grpc.Server
	mu   sync.Mutex
	// calls are the finished calls, in the order they ended.
	calls []Call
	delay map[string]time.Duration
	alter func(method string, resp any)
	token string
}

// Options tune a server that StartWith starts.
type Options struct {
	// Cert, when set, makes it serve TLS.
	Cert *tls.Certificate
	// Delay pauses every call of a method (by path,
	// "/grpc.testing.TestService/UnaryCall") this long before its handler
	// runs: a slower build of the same server.
	Delay map[string]time.Duration
	// Alter, when set, changes every unary answer before it is sent: a
	// build that answers differently.
	Alter func(method string, resp any)
	// Reflection serves gRPC server reflection (v1 and v1alpha) too.
	Reflection bool
	// Token, when set, is the bearer token every call must carry in its
	// authorization metadata ("Bearer TOKEN"): others end UNAUTHENTICATED.
	Token string
}

// Start starts an interop server on 127.0.0.1, in the clear (h2c with prior
// knowledge, as gRPC clients speak it) or, with cert set, over TLS. It
// stops when t ends.
func Start(t testing.TB, cert *tls.Certificate) *Server {
	t.Helper()
	return StartWith(t, Options{Cert: cert})
}

// StartWith starts an interop server as Start does, tuned by o.
func StartWith(t testing.TB, o Options) *Server {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Addr: l.Addr().String(), delay: o.Delay, alter: o.Alter, token: o.Token}
	opts := []grpc.ServerOption{grpc.UnaryInterceptor(s.unary), grpc.StreamInterceptor(s.stream)}
	if o.Cert != nil {
		opts = append(opts, grpc.Creds(credentials.NewServerTLSFromCert(o.Cert)))
	}
	s.srv = grpc.NewServer(opts...)
	testgrpc.RegisterTestServiceServer(s.srv, interop.NewTestServer())
	if o.Reflection {
		reflection.Register(s.srv)
	}
	go s.srv.Serve(l)
	t.Cleanup(s.srv.Stop)
	return s
}

// Calls returns the calls finished so far.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// SettledCalls returns the calls finished once none has finished for 100ms
// (at most 5s): a call ends in the server just after its client has its
// status, so right after the client's last call the last one may be
// missing.
func (s *Server) SettledCalls() []Call {
	c := s.Calls()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		now := s.Calls()
		if len(now) == len(c) {
			return now
		}
		c = now
	}
	return c
}

func (s *Server) add(c Call) {
	s.mu.Lock()
	s.calls = append(s.calls, c)
	s.mu.Unlock()
}

func (s *Server) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	time.Sleep(s.delay[info.FullMethod])
	if err := s.authorized(ctx, info.FullMethod); err != nil {
		return nil, err
	}
	resp, err := h(ctx, req)
	if err == nil && s.alter != nil {
		s.alter(info.FullMethod, resp)
	}
	c := Call{Method: info.FullMethod, Received: 1, Code: int(status.Code(err)), Traceparent: traceparent(ctx)}
	if err == nil {
		c.Sent = 1
	}
	s.add(c)
	return resp, err
}

func (s *Server) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	time.Sleep(s.delay[info.FullMethod])
	if err := s.authorized(ss.Context(), info.FullMethod); err != nil {
		return err
	}
	cs := &countingStream{ServerStream: ss}
	err := h(srv, cs)
	s.add(Call{Method: info.FullMethod, Received: cs.recv, Sent: cs.sent, Code: int(status.Code(err)), Traceparent: traceparent(ss.Context())})
	return err
}

// authorized checks a call's token when the server asks for one; a call
// refused is counted, UNAUTHENTICATED.
func (s *Server) authorized(ctx context.Context, method string) error {
	if s.token == "" {
		return nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get("authorization"); len(v) == 1 && v[0] == "Bearer "+s.token {
		return nil
	}
	s.add(Call{Method: method, Code: int(codes.Unauthenticated), Traceparent: traceparent(ctx)})
	return status.Error(codes.Unauthenticated, "no valid token")
}

func traceparent(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get("traceparent"); len(v) > 0 {
		return v[0]
	}
	return ""
}

type countingStream struct {
	grpc.ServerStream
	recv, sent int
}

func (c *countingStream) RecvMsg(m any) error {
	err := c.ServerStream.RecvMsg(m)
	if err == nil {
		c.recv++
	}
	return err
}

func (c *countingStream) SendMsg(m any) error {
	err := c.ServerStream.SendMsg(m)
	if err == nil {
		c.sent++
	}
	return err
}

// Cases are the interop client's test cases that need nothing but the
// server (no cloud credentials, no load balancer), by name as the
// interop client's --test_case takes them. Each fails the process, as the
// interop client does, when the server's answer is not the expected one.
var Cases = []struct {
	Name string
	Run  func(ctx context.Context, cc *grpc.ClientConn)
}{
	{"empty_unary", func(ctx context.Context, cc *grpc.ClientConn) {
		interop.DoEmptyUnaryCall(ctx, testgrpc.NewTestServiceClient(cc))
	}},
	{"large_unary", func(ctx context.Context, cc *grpc.ClientConn) {
		interop.DoLargeUnaryCall(ctx, testgrpc.NewTestServiceClient(cc))
	}},
	{"client_streaming", func(ctx context.Context, cc *grpc.ClientConn) {
		interop.DoClientStreaming(ctx, testgrpc.NewTestServiceClient(cc))
	}},
	{"server_streaming", func(ctx context.Context, cc *grpc.ClientConn) {
		interop.DoServerStreaming(ctx, testgrpc.NewTestServiceClient(cc))
	}},
	{"ping_pong", func(ctx context.Context, cc *grpc.ClientConn) {
		interop.DoPingPong(ctx, testgrpc.NewTestServiceClient(cc))
	}},
	{"empty_stream", func(ctx context.Context, cc *grpc.ClientConn) {
		interop.DoEmptyStream(ctx, testgrpc.NewTestServiceClient(cc))
	}},
	{"timeout_on_sleeping_server", func(ctx context.Context, cc *grpc.ClientConn) {
		interop.DoTimeoutOnSleepingServer(ctx, testgrpc.NewTestServiceClient(cc))
	}},
	{"cancel_after_begin", func(ctx context.Context, cc *grpc.ClientConn) {
		cancelAfterBegin(ctx, testgrpc.NewTestServiceClient(cc))
	}},
	{"cancel_after_first_response", func(ctx context.Context, cc *grpc.ClientConn) {
		interop.DoCancelAfterFirstResponse(ctx, testgrpc.NewTestServiceClient(cc))
	}},
	{"status_code_and_message", func(ctx context.Context, cc *grpc.ClientConn) {
		interop.DoStatusCodeAndMessage(ctx, testgrpc.NewTestServiceClient(cc))
	}},
	{"special_status_message", func(ctx context.Context, cc *grpc.ClientConn) {
		interop.DoSpecialStatusMessage(ctx, testgrpc.NewTestServiceClient(cc))
	}},
	{"custom_metadata", func(ctx context.Context, cc *grpc.ClientConn) {
		interop.DoCustomMetadata(ctx, testgrpc.NewTestServiceClient(cc))
	}},
	{"unimplemented_method", func(ctx context.Context, cc *grpc.ClientConn) { interop.DoUnimplementedMethod(ctx, cc) }},
	{"unimplemented_service", func(ctx context.Context, cc *grpc.ClientConn) {
		interop.DoUnimplementedService(ctx, testgrpc.NewUnimplementedServiceClient(cc))
	}},
}

// cancelAfterBegin is the interop client's cancel_after_begin, but that it
// takes an OK answer as well as CANCELLED: through a proxy, the server may
// see the stream's end (CloseAndRecv half-closes it) and answer before the
// cancel reaches it, and grpc-go then returns the answer now and then (the
// interop client's check failed cmd/replay's tests so in a CI run).
func cancelAfterBegin(ctx context.Context, tc testgrpc.TestServiceClient) {
	ctx, cancel := context.WithCancel(ctx)
	stream, err := tc.StreamingInputCall(ctx)
	if err != nil {
		log.Fatalf("%v.StreamingInputCall(_) = _, %v", tc, err)
	}
	cancel()
	if _, err := stream.CloseAndRecv(); status.Code(err) != codes.Canceled && err != nil {
		log.Fatalf("%v.CloseAndRecv() got error code %d, want %d", stream, status.Code(err), codes.Canceled)
	}
}

// Stop stops the server at once: a mock must answer without it.
func (s *Server) Stop() { s.srv.Stop() }
