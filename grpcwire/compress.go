package grpcwire

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
)

// ErrUnknownEncoding is returned for a grpc-encoding this package does not
// decode (snappy, zstd, a private one).
var ErrUnknownEncoding = errors.New("grpc-encoding not supported")

// maxDecompressed bounds what Decompress reads of one message, counted or
// kept: a message that inflates past it is an error (a zip bomb).
const maxDecompressed = 1 << 30

// Decompress returns data decoded from encoding ("gzip", "deflate";
// "identity" and "" give data as it is): at most keep bytes of it (0: all)
// and its full decoded size. A stream cut short (a message kept only in
// part) gives what could be decoded and the error.
func Decompress(encoding string, data []byte, keep int) (out []byte, size int64, err error) {
	var r io.Reader
	switch encoding {
	case "", "identity":
		if keep > 0 && len(data) > keep {
			return data[:keep], int64(len(data)), nil
		}
		return data, int64(len(data)), nil
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, 0, fmt.Errorf("gzip message: %w", err)
		}
		r = zr
	case "deflate":
		zr, err := zlib.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, 0, fmt.Errorf("deflate message: %w", err)
		}
		r = zr
	default:
		return nil, 0, fmt.Errorf("%w: %q", ErrUnknownEncoding, encoding)
	}
	r = io.LimitReader(r, maxDecompressed+1)
	if keep <= 0 {
		keep = maxDecompressed
	}
	var buf bytes.Buffer
	n, err := io.Copy(&buf, io.LimitReader(r, int64(keep)))
	if err == nil && n == int64(keep) {
		var rest int64
		rest, err = io.Copy(io.Discard, r)
		n += rest
	}
	if err == nil && n > maxDecompressed {
		err = fmt.Errorf("inflates past %d bytes", maxDecompressed)
	}
	if err != nil {
		return buf.Bytes(), n, fmt.Errorf("%s message: %w", encoding, err)
	}
	return buf.Bytes(), n, nil
}

// Compress encodes data with encoding ("gzip", "deflate"; "identity" and
// "" give data as it is), as a mock or a replay sends a message that was
// recorded compressed.
func Compress(encoding string, data []byte) ([]byte, error) {
	var b bytes.Buffer
	var w io.WriteCloser
	switch encoding {
	case "", "identity":
		return data, nil
	case "gzip":
		w = gzip.NewWriter(&b)
	case "deflate":
		zw, err := zlib.NewWriterLevel(&b, flate.DefaultCompression)
		if err != nil {
			return nil, err
		}
		w = zw
	default:
		return nil, fmt.Errorf("%w: %q", ErrUnknownEncoding, encoding)
	}
	if _, err := w.Write(data); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
