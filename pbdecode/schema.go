package pbdecode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// Schema knows the services and messages of some .proto files, so that
// messages decode with their field names.
type Schema struct {
	files *protoregistry.Files
	set   *descriptorpb.FileDescriptorSet
}

// LoadFiles reads a schema from files: .proto sources (compiled here,
// imports looked up in importPaths, then beside each file; the standard
// google/protobuf imports are known), or FileDescriptorSets as protoc
// --descriptor_set_out and buf build write them (any other extension:
// .pb, .protoset, .bin).
func LoadFiles(ctx context.Context, paths, importPaths []string) (*Schema, error) {
	set := &descriptorpb.FileDescriptorSet{}
	var sources []string
	for _, p := range paths {
		if strings.HasSuffix(p, ".proto") {
			sources = append(sources, p)
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("read descriptor set: %w", err)
		}
		var one descriptorpb.FileDescriptorSet
		if err := proto.Unmarshal(b, &one); err != nil {
			return nil, fmt.Errorf("read descriptor set %s: not a FileDescriptorSet: %w", p, err)
		}
		set.File = append(set.File, one.File...)
	}
	if len(sources) > 0 {
		fds, err := compile(ctx, sources, importPaths)
		if err != nil {
			return nil, err
		}
		set.File = append(set.File, fds...)
	}
	return NewSchema(set.File)
}

// compile compiles .proto sources, each named relative to an import path.
func compile(ctx context.Context, sources, importPaths []string) ([]*descriptorpb.FileDescriptorProto, error) {
	paths := append([]string(nil), importPaths...)
	var names []string
	for _, src := range sources {
		dir, name := filepath.Split(src)
		if dir == "" {
			dir = "."
		}
		rel, found := name, false
		for _, ip := range importPaths {
			if r, err := filepath.Rel(ip, src); err == nil && !strings.HasPrefix(r, "..") {
				rel, found = filepath.ToSlash(r), true
				break
			}
		}
		if !found {
			paths = append(paths, dir)
		}
		names = append(names, rel)
	}
	c := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: paths}),
	}
	files, err := c.Compile(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("compile %s: %w", strings.Join(sources, ", "), err)
	}
	var out []*descriptorpb.FileDescriptorProto
	seen := map[string]bool{}
	var add func(fd protoreflect.FileDescriptor)
	add = func(fd protoreflect.FileDescriptor) {
		if seen[fd.Path()] {
			return
		}
		seen[fd.Path()] = true
		imports := fd.Imports()
		for i := range imports.Len() {
			add(imports.Get(i).FileDescriptor)
		}
		out = append(out, protodesc.ToFileDescriptorProto(fd))
	}
	for _, f := range files {
		add(f)
	}
	return out, nil
}

// NewSchema builds a schema from file descriptors (a FileDescriptorSet's,
// or what a server's reflection service sent), dependencies included; a
// file given twice counts once.
func NewSchema(fds []*descriptorpb.FileDescriptorProto) (*Schema, error) {
	seen := map[string]bool{}
	set := &descriptorpb.FileDescriptorSet{}
	for _, fd := range fds {
		if !seen[fd.GetName()] {
			seen[fd.GetName()] = true
			set.File = append(set.File, fd)
		}
	}
	files, err := protodesc.FileOptions{AllowUnresolvable: true}.NewFiles(set)
	if err != nil {
		return nil, fmt.Errorf("build protobuf schema: %w", err)
	}
	return &Schema{files: files, set: set}, nil
}

// DescriptorSet returns the schema as a serialized FileDescriptorSet,
// which LoadFiles reads back.
func (s *Schema) DescriptorSet() ([]byte, error) {
	return proto.Marshal(s.set)
}

// ErrUnknownMethod is returned by Schema.Method for a method the schema
// does not hold.
var ErrUnknownMethod = errors.New("method not in the schema")

// Method returns the request and response types of a method, given as
// its path ("/route.RoutesService/FindRoute") or full name
// ("route.RoutesService.FindRoute").
func (s *Schema) Method(method string) (in, out protoreflect.MessageDescriptor, err error) {
	name := strings.TrimPrefix(method, "/")
	svc, m, ok := strings.Cut(name, "/")
	if !ok {
		i := strings.LastIndexByte(name, '.')
		if i < 0 {
			return nil, nil, fmt.Errorf("%w: %q", ErrUnknownMethod, method)
		}
		svc, m = name[:i], name[i+1:]
	}
	d, err := s.files.FindDescriptorByName(protoreflect.FullName(svc))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: service %s", ErrUnknownMethod, svc)
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil, nil, fmt.Errorf("%w: %s is not a service", ErrUnknownMethod, svc)
	}
	md := sd.Methods().ByName(protoreflect.Name(m))
	if md == nil {
		return nil, nil, fmt.Errorf("%w: %s has no method %s", ErrUnknownMethod, svc, m)
	}
	return md.Input(), md.Output(), nil
}

// Services lists the services the schema holds, by full name.
func (s *Schema) Services() []string {
	var out []string
	s.files.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		for i := range fd.Services().Len() {
			out = append(out, string(fd.Services().Get(i).FullName()))
		}
		return true
	})
	return out
}

// decode decodes b as a message of md into a tree with the fields' names
// (as in the .proto file; enums by name, 64-bit integers as strings, bytes
// as base64: protojson's mapping). Fields the schema does not know are
// added by number, as Raw gives them, so that a build sending a field its
// schema lacks still differs.
func decode(md protoreflect.MessageDescriptor, b []byte) (map[string]any, error) {
	msg := dynamicpb.NewMessage(md)
	if err := (proto.UnmarshalOptions{}).Unmarshal(b, msg); err != nil {
		return nil, fmt.Errorf("decode %s: %w", md.FullName(), err)
	}
	j, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(msg)
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", md.FullName(), err)
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var tree map[string]any
	if err := dec.Decode(&tree); err != nil {
		return nil, fmt.Errorf("decode %s: %w", md.FullName(), err)
	}
	if unknown := msg.GetUnknown(); len(unknown) > 0 {
		if extra, err := Raw(unknown); err == nil {
			for k, v := range extra {
				tree[k] = v
			}
		}
	}
	return tree, nil
}
