package main

import (
	"context"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/replaykit/replay/pbdecode"
)

// protoFlags give gRPC messages their field names: --proto FILE (a .proto
// source or a FileDescriptorSet) and --proto-path DIR for its imports.
type protoFlags struct {
	files, paths []string
	reflect      bool // --proto-reflect (run and compare)
}

func (p *protoFlags) addFlags(f *pflag.FlagSet) {
	f.StringArrayVar(&p.files, "proto", nil, "decode gRPC messages with the field names of `FILE`: a .proto source or a descriptor set (protoc --descriptor_set_out) (repeatable; default: by field number)")
	f.StringArrayVar(&p.paths, "proto-path", nil, "look for the imports of --proto files in `DIR` (repeatable)")
}

// decoder returns the decoder of the flags: by field number without
// --proto.
func (p *protoFlags) decoder(ctx context.Context, cmd string) (*pbdecode.Decoder, error) {
	if p.reflect && len(p.files) > 0 {
		return nil, usagef("%s: give --proto FILE or --proto-reflect, not both", cmd)
	}
	if len(p.files) == 0 {
		return &pbdecode.Decoder{}, nil
	}
	s, err := pbdecode.LoadFiles(ctx, p.files, p.paths)
	if err != nil {
		return nil, usagef("%s: --proto: %v", cmd, err)
	}
	return &pbdecode.Decoder{Schema: s}, nil
}

// absPaths returns paths made absolute, as run files record them (a report
// may be made from another directory).
func absPaths(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		if a, err := filepath.Abs(p); err == nil {
			p = a
		}
		out[i] = p
	}
	return out
}
