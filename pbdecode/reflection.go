package pbdecode

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	rpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	rpbalpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
)

// maxReflectionFiles bounds the files FetchSchema asks a server for.
const maxReflectionFiles = 1000

// FetchSchema asks a server's reflection service (grpc.reflection.v1, or
// v1alpha for older servers) for its services and the files that define
// them, dependencies included.
func FetchSchema(ctx context.Context, cc grpc.ClientConnInterface) (*Schema, error) {
	fds, err := reflect(ctx, v1{rpb.NewServerReflectionClient(cc)})
	if status.Code(err) == codes.Unimplemented {
		fds, err = reflect(ctx, v1alpha{rpbalpha.NewServerReflectionClient(cc)})
	}
	if err != nil {
		return nil, fmt.Errorf("server reflection: %w", err)
	}
	return NewSchema(fds)
}

// reflector is one version of the reflection protocol, reduced to what
// FetchSchema asks.
type reflector interface {
	open(ctx context.Context) (reflectStream, error)
}

type reflectStream interface {
	services() ([]string, error)
	// files asks for the files defining a symbol (file == false) or a file
	// by name, as serialized FileDescriptorProtos.
	files(name string, file bool) ([][]byte, error)
	close()
}

func reflect(ctx context.Context, r reflector) ([]*descriptorpb.FileDescriptorProto, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := r.open(ctx)
	if err != nil {
		return nil, err
	}
	defer st.close()
	svcs, err := st.services()
	if err != nil {
		return nil, err
	}
	have := map[string]*descriptorpb.FileDescriptorProto{}
	var order []*descriptorpb.FileDescriptorProto
	add := func(raw [][]byte) error {
		for _, b := range raw {
			fd := &descriptorpb.FileDescriptorProto{}
			if err := proto.Unmarshal(b, fd); err != nil {
				return fmt.Errorf("bad file descriptor: %w", err)
			}
			if have[fd.GetName()] == nil {
				have[fd.GetName()] = fd
				order = append(order, fd)
			}
		}
		return nil
	}
	for _, svc := range svcs {
		if strings.HasPrefix(svc, "grpc.reflection.") {
			continue
		}
		raw, err := st.files(svc, false)
		if err != nil {
			return nil, fmt.Errorf("service %s: %w", svc, err)
		}
		if err := add(raw); err != nil {
			return nil, err
		}
	}
	// Dependencies the server did not send with the files.
	for i := 0; i < len(order) && len(order) < maxReflectionFiles; i++ {
		for _, dep := range order[i].GetDependency() {
			if have[dep] != nil {
				continue
			}
			raw, err := st.files(dep, true)
			if err != nil {
				continue // unresolvable imports are allowed (NewSchema)
			}
			if err := add(raw); err != nil {
				return nil, err
			}
		}
	}
	return order, nil
}

type v1 struct{ c rpb.ServerReflectionClient }

type v1Stream struct {
	s rpb.ServerReflection_ServerReflectionInfoClient
}

func (r v1) open(ctx context.Context) (reflectStream, error) {
	s, err := r.c.ServerReflectionInfo(ctx)
	if err != nil {
		return nil, err
	}
	return &v1Stream{s}, nil
}

func (s *v1Stream) ask(req *rpb.ServerReflectionRequest) (*rpb.ServerReflectionResponse, error) {
	if err := s.s.Send(req); err != nil {
		return nil, err
	}
	resp, err := s.s.Recv()
	if err != nil {
		return nil, err
	}
	if e := resp.GetErrorResponse(); e != nil {
		return nil, status.Error(codes.Code(e.GetErrorCode()), e.GetErrorMessage())
	}
	return resp, nil
}

func (s *v1Stream) services() ([]string, error) {
	resp, err := s.ask(&rpb.ServerReflectionRequest{MessageRequest: &rpb.ServerReflectionRequest_ListServices{}})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, svc := range resp.GetListServicesResponse().GetService() {
		out = append(out, svc.GetName())
	}
	return out, nil
}

func (s *v1Stream) files(name string, file bool) ([][]byte, error) {
	req := &rpb.ServerReflectionRequest{MessageRequest: &rpb.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: name}}
	if file {
		req.MessageRequest = &rpb.ServerReflectionRequest_FileByFilename{FileByFilename: name}
	}
	resp, err := s.ask(req)
	if err != nil {
		return nil, err
	}
	return resp.GetFileDescriptorResponse().GetFileDescriptorProto(), nil
}

func (s *v1Stream) close() { s.s.CloseSend() }

type v1alpha struct {
	c rpbalpha.ServerReflectionClient
}

type v1alphaStream struct {
	s rpbalpha.ServerReflection_ServerReflectionInfoClient
}

func (r v1alpha) open(ctx context.Context) (reflectStream, error) {
	s, err := r.c.ServerReflectionInfo(ctx)
	if err != nil {
		return nil, err
	}
	return &v1alphaStream{s}, nil
}

func (s *v1alphaStream) ask(req *rpbalpha.ServerReflectionRequest) (*rpbalpha.ServerReflectionResponse, error) {
	if err := s.s.Send(req); err != nil {
		return nil, err
	}
	resp, err := s.s.Recv()
	if err != nil {
		return nil, err
	}
	if e := resp.GetErrorResponse(); e != nil {
		return nil, status.Error(codes.Code(e.GetErrorCode()), e.GetErrorMessage())
	}
	return resp, nil
}

func (s *v1alphaStream) services() ([]string, error) {
	resp, err := s.ask(&rpbalpha.ServerReflectionRequest{MessageRequest: &rpbalpha.ServerReflectionRequest_ListServices{}})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, svc := range resp.GetListServicesResponse().GetService() {
		out = append(out, svc.GetName())
	}
	return out, nil
}

func (s *v1alphaStream) files(name string, file bool) ([][]byte, error) {
	req := &rpbalpha.ServerReflectionRequest{MessageRequest: &rpbalpha.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: name}}
	if file {
		req.MessageRequest = &rpbalpha.ServerReflectionRequest_FileByFilename{FileByFilename: name}
	}
	resp, err := s.ask(req)
	if err != nil {
		return nil, err
	}
	return resp.GetFileDescriptorResponse().GetFileDescriptorProto(), nil
}

func (s *v1alphaStream) close() { s.s.CloseSend() }
