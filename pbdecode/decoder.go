package pbdecode

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/replaykit/replay/snapshots"
)

// Decoder decodes the messages of gRPC calls into trees, with field names
// when its Schema knows the method, by field number otherwise. The zero
// value decodes without a schema. It is safe for concurrent use.
type Decoder struct {
	// Schema gives field names; nil decodes every message by number.
	Schema *Schema
}

// Tree decodes one message of method (its path,
// "/route.RoutesService/FindRoute"), sent by from, into a JSON-like tree:
// map[string]any, []any, string, json.Number and bool values, as
// encoding/json decodes with UseNumber. With a schema that knows the
// method the keys are field names; otherwise field numbers (see Raw). An
// empty message is an empty object.
func (d *Decoder) Tree(method string, from snapshots.Sender, msg []byte) (map[string]any, error) {
	if d != nil && d.Schema != nil {
		in, out, err := d.Schema.Method(method)
		if err == nil {
			md := out
			if from == snapshots.FromClient {
				md = in
			}
			return decode(md, msg)
		}
		if !errors.Is(err, ErrUnknownMethod) {
			return nil, err
		}
	}
	return Raw(msg)
}

// JSON is Tree encoded as JSON, with keys sorted: what a differ or a
// matcher made for JSON bodies reads.
func (d *Decoder) JSON(method string, from snapshots.Sender, msg []byte) ([]byte, error) {
	t, err := d.Tree(method, from, msg)
	if err != nil {
		return nil, err
	}
	return json.Marshal(t)
}

// Messages decodes every message of a call sent by from into one JSON
// array of trees, in order: a stream compared or matched as one JSON
// document. A message that does not decode (it was cut, or is not
// protobuf) is its base64 string; a message compressed with an encoding
// replay does not decode is {"encoding": …, "size": …}.
func (d *Decoder) Messages(method string, from snapshots.Sender, ms []snapshots.Message) []any {
	out := []any{}
	for _, m := range ms {
		if m.From != from {
			continue
		}
		out = append(out, d.one(method, m))
	}
	return out
}

func (d *Decoder) one(method string, m snapshots.Message) any {
	if m.Encoding != "" {
		return map[string]any{"encoding": m.Encoding, "size": json.Number(strconv.FormatInt(m.Size, 10))}
	}
	if !m.Truncated() {
		if t, err := d.Tree(method, m.From, m.Data); err == nil {
			return t
		}
	}
	return base64.StdEncoding.EncodeToString(m.Data)
}
