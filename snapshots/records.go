package snapshots

import (
	"encoding/base64"
	"fmt"
	"math"
	"net/http"
	"time"
	"unicode/utf8"
)

// encodingBase64 marks a body or text stored as base64 because it is not
// valid UTF-8 (JSON strings cannot carry arbitrary bytes).
const encodingBase64 = "base64"

// jsonExchange is an Exchange as JSON Lines and HAR's "_replay" carry it.
type jsonExchange struct {
	Type                 string        `json:"type,omitempty"`
	ID                   int64         `json:"id"`
	Direction            Direction     `json:"direction"`
	Protocol             string        `json:"protocol,omitempty"`
	Service              string        `json:"service,omitempty"`
	Start                string        `json:"start,omitempty"`
	DurationNS           int64         `json:"duration_ns"`
	Method               string        `json:"method,omitempty"`
	URL                  string        `json:"url,omitempty"`
	Proto                string        `json:"proto,omitempty"`
	RequestHeader        http.Header   `json:"request_header,omitempty"`
	RequestBody          *string       `json:"request_body,omitempty"`
	RequestBodyEncoding  string        `json:"request_body_encoding,omitempty"`
	RequestBodySize      int64         `json:"request_body_size"`
	Status               int           `json:"status,omitempty"`
	ResponseHeader       http.Header   `json:"response_header,omitempty"`
	ResponseBody         *string       `json:"response_body,omitempty"`
	ResponseBodyEncoding string        `json:"response_body_encoding,omitempty"`
	ResponseBodySize     int64         `json:"response_body_size"`
	ResponseTrailer      http.Header   `json:"response_trailer,omitempty"`
	Messages             []jsonMessage `json:"messages,omitempty"`
	Endpoint             string        `json:"endpoint,omitempty"`
	ParentID             int64         `json:"parent_id,omitempty"`
	TraceID              string        `json:"trace_id,omitempty"`
	Error                string        `json:"error,omitempty"`
	ClientConn           int64         `json:"client_conn,omitempty"`
}

// jsonMessage is a Message as JSON Lines and HAR's "_replay" carry it.
type jsonMessage struct {
	From         Sender  `json:"from"`
	OffsetNS     int64   `json:"offset_ns"`
	Data         *string `json:"data,omitempty"`
	DataEncoding string  `json:"data_encoding,omitempty"`
	Size         int64   `json:"size"`
	Compressed   bool    `json:"compressed,omitempty"`
	Encoding     string  `json:"encoding,omitempty"`
}

func toJSONMessages(ms []Message) []jsonMessage {
	if len(ms) == 0 {
		return nil
	}
	out := make([]jsonMessage, len(ms))
	for i, m := range ms {
		out[i] = jsonMessage{From: m.From, OffsetNS: int64(m.Offset), Size: m.Size, Compressed: m.Compressed, Encoding: m.Encoding}
		out[i].Data, out[i].DataEncoding = encodeBody(m.Data)
	}
	return out
}

func fromJSONMessages(js []jsonMessage) ([]Message, error) {
	if len(js) == 0 {
		return nil, nil
	}
	out := make([]Message, len(js))
	for i, j := range js {
		if j.From != FromClient && j.From != FromServer {
			return nil, fmt.Errorf("message %d: unknown sender %q (want client or server)", i+1, j.From)
		}
		data, err := decodeBody(j.Data, j.DataEncoding)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i+1, err)
		}
		if j.Size < int64(len(data)) {
			return nil, fmt.Errorf("message %d: size %d smaller than its %d bytes of data", i+1, j.Size, len(data))
		}
		out[i] = Message{From: j.From, Offset: time.Duration(j.OffsetNS), Data: data, Size: j.Size, Compressed: j.Compressed, Encoding: j.Encoding}
	}
	return out, nil
}

// jsonStatement is a Statement as JSON Lines and HAR carry it.
type jsonStatement struct {
	Type        string `json:"type,omitempty"`
	ID          int64  `json:"id"`
	ExchangeID  int64  `json:"exchange_id,omitempty"`
	TraceID     string `json:"trace_id,omitempty"`
	Conn        int64  `json:"conn"`
	Start       string `json:"start,omitempty"`
	DurationNS  int64  `json:"duration_ns"`
	Protocol    string `json:"protocol,omitempty"`
	SQL         string `json:"sql"`
	SQLEncoding string `json:"sql_encoding,omitempty"`
	Fingerprint string `json:"fingerprint,omitempty"`
	Rows        int64  `json:"rows"`
	CommandTag  string `json:"command_tag,omitempty"`
	Error       string `json:"error,omitempty"`
}

// fileHeader describes an exported file: the first line of JSON Lines, the
// "_replay" object of a HAR log.
type fileHeader struct {
	Format  string        `json:"format"`
	Version int           `json:"version"`
	Created string        `json:"created,omitempty"`
	Capture *CaptureStats `json:"capture,omitempty"`
	Rules   []string      `json:"rules,omitempty"`
}

func toJSONExchange(e *Exchange) *jsonExchange {
	j := &jsonExchange{
		Type: "exchange", ID: e.ID, Direction: e.Direction, Protocol: e.Protocol,
		Service: e.Service, Start: formatTime(e.Start), DurationNS: int64(e.Duration),
		Method: e.Method, URL: e.URL, Proto: e.Proto,
		RequestHeader: e.RequestHeader, RequestBodySize: e.RequestBodySize,
		Status: e.Status, ResponseHeader: e.ResponseHeader, ResponseBodySize: e.ResponseBodySize,
		Endpoint: e.Endpoint, ParentID: e.ParentID, TraceID: e.TraceID, Error: e.Error,
		ClientConn: e.ClientConn,
	}
	j.ResponseTrailer = e.ResponseTrailer
	j.Messages = toJSONMessages(e.Messages)
	j.RequestBody, j.RequestBodyEncoding = encodeBody(e.RequestBody)
	j.ResponseBody, j.ResponseBodyEncoding = encodeBody(e.ResponseBody)
	return j
}

func (j *jsonExchange) exchange() (*Exchange, error) {
	if j.ID < 0 {
		return nil, fmt.Errorf("negative id %d", j.ID)
	}
	if err := checkDirection(j.Direction); err != nil {
		return nil, err
	}
	start, err := parseTime(j.Start)
	if err != nil {
		return nil, err
	}
	e := &Exchange{
		ID: j.ID, Direction: j.Direction, Protocol: j.Protocol, Service: j.Service,
		Start: start, Duration: time.Duration(j.DurationNS),
		Method: j.Method, URL: j.URL, Proto: j.Proto,
		RequestHeader: j.RequestHeader, RequestBodySize: j.RequestBodySize,
		Status: j.Status, ResponseHeader: j.ResponseHeader, ResponseBodySize: j.ResponseBodySize,
		Endpoint: j.Endpoint, ParentID: j.ParentID, TraceID: j.TraceID, Error: j.Error,
		ClientConn: j.ClientConn,
	}
	if e.Direction == "" {
		e.Direction = Inbound
	}
	if len(j.ResponseTrailer) > 0 {
		e.ResponseTrailer = j.ResponseTrailer
	}
	if e.Messages, err = fromJSONMessages(j.Messages); err != nil {
		return nil, err
	}
	if e.RequestBody, err = decodeBody(j.RequestBody, j.RequestBodyEncoding); err != nil {
		return nil, fmt.Errorf("request body: %w", err)
	}
	if e.ResponseBody, err = decodeBody(j.ResponseBody, j.ResponseBodyEncoding); err != nil {
		return nil, fmt.Errorf("response body: %w", err)
	}
	return e, nil
}

func toJSONStatement(s *Statement) *jsonStatement {
	j := &jsonStatement{
		Type: "statement", ID: s.ID, ExchangeID: s.ExchangeID, TraceID: s.TraceID, Conn: s.Conn,
		Start: formatTime(s.Start), DurationNS: int64(s.Duration), Protocol: s.Protocol,
		SQL: s.SQL, Fingerprint: s.Fingerprint, Rows: s.Rows, CommandTag: s.CommandTag, Error: s.Error,
	}
	if !utf8.ValidString(s.SQL) {
		j.SQL, j.SQLEncoding = base64.StdEncoding.EncodeToString([]byte(s.SQL)), encodingBase64
	}
	return j
}

func (j *jsonStatement) statement() (*Statement, error) {
	if j.ID < 0 {
		return nil, fmt.Errorf("negative id %d", j.ID)
	}
	start, err := parseTime(j.Start)
	if err != nil {
		return nil, err
	}
	s := &Statement{
		ID: j.ID, ExchangeID: j.ExchangeID, TraceID: j.TraceID, Conn: j.Conn,
		Start: start, Duration: time.Duration(j.DurationNS), Protocol: j.Protocol,
		SQL: j.SQL, Fingerprint: j.Fingerprint, Rows: j.Rows, CommandTag: j.CommandTag, Error: j.Error,
	}
	switch j.SQLEncoding {
	case "":
	case encodingBase64:
		b, err := base64.StdEncoding.DecodeString(j.SQL)
		if err != nil {
			return nil, fmt.Errorf("sql: %w", err)
		}
		s.SQL = string(b)
	default:
		return nil, fmt.Errorf("unknown sql_encoding %q", j.SQLEncoding)
	}
	return s, nil
}

// encodeBody returns b as a JSON string, base64-encoded when it is not
// UTF-8; nil and empty bodies give nil.
func encodeBody(b []byte) (*string, string) {
	if len(b) == 0 {
		return nil, ""
	}
	if utf8.Valid(b) {
		s := string(b)
		return &s, ""
	}
	s := base64.StdEncoding.EncodeToString(b)
	return &s, encodingBase64
}

// decodeBody reverses encodeBody.
func decodeBody(s *string, encoding string) ([]byte, error) {
	if s == nil || *s == "" {
		return nil, nil
	}
	switch encoding {
	case "":
		return []byte(*s), nil
	case encodingBase64:
		b, err := base64.StdEncoding.DecodeString(*s)
		if err != nil {
			return nil, err
		}
		if len(b) == 0 {
			return nil, nil
		}
		return b, nil
	}
	return nil, fmt.Errorf("unknown encoding %q", encoding)
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func parseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("bad time %q: want RFC 3339", s)
	}
	return checkTime(t, s)
}

// Times are stored as Unix nanoseconds, which reach from 1678 to 2262.
var (
	minTime = time.Unix(0, math.MinInt64).UTC()
	maxTime = time.Unix(0, math.MaxInt64).UTC()
)

// checkTime returns t in UTC if it can be stored; the zero time stands for
// "not known" and is kept.
func checkTime(t time.Time, s string) (time.Time, error) {
	if t.IsZero() {
		return time.Time{}, nil
	}
	if t.Before(minTime) || t.After(maxTime) {
		return time.Time{}, fmt.Errorf("time %q out of range (years 1678 to 2262)", s)
	}
	return t.UTC(), nil
}

func checkDirection(d Direction) error {
	switch d {
	case "", Inbound, Outbound:
		return nil
	}
	return fmt.Errorf("unknown direction %q (want inbound or outbound)", d)
}
