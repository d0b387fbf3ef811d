package session

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/replaykit/replay/pbdecode"
)

// ProtosetSuffix names the file beside a run file that holds the schema
// its target's server reflection gave (ResponseCapture.Reflect): a
// FileDescriptorSet, which the run file's proto setting names, so that a
// report decodes its gRPC answers with field names later.
const ProtosetSuffix = ".protoset"

// reflectTimeout bounds asking a target for its schema.
const reflectTimeout = 10 * time.Second

// reflectSchema asks target's gRPC server reflection for its schema and,
// when runPath is set, writes it beside the run file; it returns the
// decoder of the schema and the file's absolute path.
func reflectSchema(ctx context.Context, target, runPath string) (*pbdecode.Decoder, string, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, "", fmt.Errorf("server reflection: target %q: %w", target, err)
	}
	creds, port := insecure.NewCredentials(), "80"
	if u.Scheme == "https" {
		creds, port = credentials.NewTLS(nil), "443"
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), port)
	}
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return nil, "", fmt.Errorf("server reflection: %w", err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(ctx, reflectTimeout)
	defer cancel()
	s, err := pbdecode.FetchSchema(ctx, cc)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", addr, err)
	}
	dec := &pbdecode.Decoder{Schema: s}
	if runPath == "" {
		return dec, "", nil
	}
	b, err := s.DescriptorSet()
	if err != nil {
		return nil, "", err
	}
	path := runPath + ProtosetSuffix
	if a, err := filepath.Abs(path); err == nil {
		path = a
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return nil, "", fmt.Errorf("server reflection: %w", err)
	}
	return dec, path, nil
}
