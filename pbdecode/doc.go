// Package pbdecode decodes protobuf messages, the ones gRPC calls carry,
// into JSON-like trees that replay's JSON machinery reads: the mock's
// noise-tolerant matching, and the response differ (analyzer/respdiff).
//
// Without a schema, Raw reads the wire alone
// (google.golang.org/protobuf/encoding/protowire): an object keyed by
// field number, a field seen more than once an array. The wire types show
// in the values: varint, fixed32 and fixed64 fields are numbers
// (unsigned), a bytes field a nested object when it parses as a message
// and is not text, a string when it is UTF-8 text, else base64. Fields
// gives the fields themselves (number, wire type, value).
//
//	{"1": "Lisbon", "2": [{"1": "Porto", "2": 4617315517961601024}], "3": 313000}
//
// With a Schema the keys are the fields' names and the values protojson's
// (enums by name, 64-bit integers as strings, timestamps in RFC 3339), and
// fields the schema lacks are added by number:
//
//	{"name": "Lisbon", "legs": [{"via": "Porto", "km": 2.5}], "meters": "313000"}
//
// A Schema comes from .proto files (LoadFiles compiles them with
// github.com/bufbuild/protocompile), from FileDescriptorSets (protoc
// --descriptor_set_out; LoadFiles too), from descriptors (NewSchema), or
// from a server's reflection service (FetchSchema). Schema.Method gives a
// method's request and response types.
//
// Decoder is what callers hold: Decoder.Tree decodes one message of a
// method, given as its path ("/route.RoutesService/FindRoute") and its
// sender (snapshots.FromClient for the request type, FromServer for the
// response's), with names when its Schema knows the method and by number
// otherwise; Decoder.JSON encodes that tree (keys sorted); and
// Decoder.Messages decodes one side of a recorded call
// (snapshots.Exchange.Messages) into an array of trees, in order, a
// stream read as one JSON document:
//
//	var d pbdecode.Decoder // no schema: by field number
//	tree := d.Messages(method, snapshots.FromServer, e.Messages)
//	body, _ := json.Marshal(tree) // diff or match as JSON
//
// What it does not do: guess a field's type beyond its wire type without a
// schema (a varint could be a bool, an enum or a zigzagged integer; a
// bytes field a packed repeated field), or decode compression (package
// grpcwire gives messages decompressed).
package pbdecode
