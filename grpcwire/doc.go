// Package grpcwire is gRPC's message layer, over HTTP/2 (which
// golang.org/x/net/http2 and net/http carry): length-prefixed messages,
// their compression, the status a call ends with, and its deadline.
//
// A gRPC request or response body is a sequence of messages, each a
// 5-byte prefix (a compressed flag and a big-endian length) and that many
// bytes; AppendFrame writes one, ParsePrefix reads a prefix, ReadFrame
// reads one message from an io.Reader. Splitter cuts a body that arrives in
// pieces into messages without waiting for a whole one (a proxy forwards
// every byte as it comes and taps them), keeping at most Splitter.Keep
// bytes of each. Stream builds on it: fed one side's bytes as they pass,
// it gives the snapshots.Message values a recording keeps, each with its
// time, decompressed (grpc-encoding gzip or deflate; Decompress, Compress),
// within a byte budget.
//
// Status is grpc-status, grpc-message (percent-encoded on the wire:
// EncodeMessage, DecodeMessage) and grpc-status-details-bin; ParseStatus
// reads it from trailers, or from the headers of a "Trailers-Only"
// answer, and Status.Trailer writes it. CodeName names a code
// ("NOT_FOUND"). ParseTimeout and FormatTimeout read and write
// grpc-timeout ("100m", "5S").
//
// Each layer is fuzzed on its own (FuzzSplitter, FuzzReadFrame,
// FuzzTimeout, FuzzStatus). Decoding the messages themselves (protobuf)
// is package pbdecode's; HTTP/2 frames are golang.org/x/net/http2's, and
// an HTTP/2 connection seen passively (a capture) package h2wire's.
package grpcwire
