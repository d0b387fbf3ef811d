package mcpserver

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaykit/replay/internal/buildinfo"
)

// DefaultStopTimeout is Config.StopTimeout when it is zero.
const DefaultStopTimeout = 15 * time.Second

// Config configures a Server.
type Config struct {
	// Replay is the replay binary the tool calls run; empty is the running
	// executable (replay mcp).
	Replay string
	// Version is the server's version in the MCP handshake; empty is the
	// running executable's (internal/buildinfo).
	Version string
	// Dir is the children's working directory, against which relative paths
	// in the inputs resolve; empty is the server's.
	Dir string
	// Env is added to the children's environment (the server's own).
	Env []string
	// StopTimeout is how long a cancelled call's child has, after SIGINT, to
	// stop its builds before it is killed; zero is DefaultStopTimeout.
	StopTimeout time.Duration
	// Logger logs the server's activity; nil discards.
	Logger *slog.Logger
}

// Server is replay's MCP server.
type Server struct {
	cfg Config
	srv *mcp.Server
}

// instructions tell a client how the tools fit together.
const instructions = `replay records a service's traffic into a snapshot, replays it against builds and compares them.
replay_inspect shows what a snapshot holds; replay_compare replays it against a baseline and a candidate build
(or compares two run files) and says, per endpoint, what got slower and why (p95, SQL per request, N+1);
replay_run replays it against one build; replay_report renders a run file or a comparison's directory again;
replay_demo makes a snapshot and a comparison on the demo workload. Results: structured content is the
report's JSON, text the Markdown Result block. A regression is a result (verdict "regression"), not an error.`

// New returns a server with replay's tools.
func New(cfg Config) (*Server, error) {
	if cfg.Replay == "" {
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("mcp: find the replay binary: %w", err)
		}
		cfg.Replay = self
	}
	if cfg.Dir != "" {
		dir, err := filepath.Abs(cfg.Dir)
		if err != nil {
			return nil, fmt.Errorf("mcp: %w", err)
		}
		cfg.Dir = dir
	}
	if cfg.Version == "" {
		cfg.Version = buildinfo.Read().String()
	}
	if cfg.StopTimeout <= 0 {
		cfg.StopTimeout = DefaultStopTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: "replay", Title: "replay", Version: cfg.Version},
		&mcp.ServerOptions{Instructions: instructions, Logger: cfg.Logger})
	s.addTools()
	return s, nil
}

// Run serves one client on t (e.g. &mcp.StdioTransport{}) until it
// disconnects or ctx is done.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error { return s.srv.Run(ctx, t) }

// ServeStdio serves one client on stdin and stdout (replay mcp) until it
// disconnects or ctx is done. When stdin ends, the calls still running
// finish and their answers are written before it returns.
func ServeStdio(ctx context.Context, cfg Config) error {
	s, err := New(cfg)
	if err != nil {
		return err
	}
	d := newDrain()
	return s.Run(ctx, &mcp.IOTransport{Reader: d.reader(os.Stdin), Writer: d.writer(nopCloser{os.Stdout})})
}

// nopCloser is a writer whose Close leaves it open: stdout outlives the
// session.
type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// Connect serves a client on t in the background, e.g. one end of
// mcp.NewInMemoryTransports.
func (s *Server) Connect(ctx context.Context, t mcp.Transport) (*mcp.ServerSession, error) {
	return s.srv.Connect(ctx, t, nil)
}

// The output schemas: the keys of replay's JSON contracts that checks
// outside rely on (DESIGN's CLI contract); the documents hold more.
var (
	anyReport     = jsonObject("the JSON the command prints with --format json: a run's or a comparison's report")
	inspectReport = jsonObject("the JSON of replay inspect --format json", "exchanges", "statements", "endpoints")
	runReport     = jsonObject("the JSON of replay run --format json", "passed", "requests", "endpoints")
	compareReport = jsonObject("the JSON of replay compare --format json", "verdict", "passed", "endpoints")
)

func jsonObject(description string, required ...string) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "object", Description: description, Required: required}
	for _, k := range required {
		switch k {
		case "passed":
			s.Properties = setProperty(s.Properties, k, &jsonschema.Schema{Type: "boolean"})
		case "verdict":
			s.Properties = setProperty(s.Properties, k, &jsonschema.Schema{Type: "string",
				Enum: []any{"regression", "improvement", "unchanged", "inconclusive"}})
		case "requests", "exchanges", "statements":
			s.Properties = setProperty(s.Properties, k, &jsonschema.Schema{Type: "integer"})
		}
	}
	return s
}

func setProperty(m map[string]*jsonschema.Schema, k string, v *jsonschema.Schema) map[string]*jsonschema.Schema {
	if m == nil {
		m = map[string]*jsonschema.Schema{}
	}
	m[k] = v
	return m
}

func (s *Server) addTools() {
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	mcp.AddTool(s.srv, &mcp.Tool{Name: "replay_inspect", Title: "Inspect a snapshot", Annotations: ro, OutputSchema: inspectReport,
		Description: "What a snapshot holds: exchanges per direction, service and endpoint, their counts, status classes, " +
			"recorded latency and SQL statements per request; the most frequent statements; capture statistics."},
		s.inspect)
	mcp.AddTool(s.srv, &mcp.Tool{Name: "replay_run", Title: "Replay a snapshot against one build", OutputSchema: runReport,
		Description: "Replays the snapshot's inbound requests against one build (a URL, or a command replay starts) under a load " +
			"model, with upstreams mocked and SQL counted, writes a run file and reports per endpoint latency, failures, " +
			"SQL per request and goals. Sends progress notifications when given a progress token."},
		s.run)
	mcp.AddTool(s.srv, &mcp.Tool{Name: "replay_compare", Title: "Compare two builds", OutputSchema: compareReport,
		Description: "Replays the snapshot against a baseline and a candidate build, interleaved, or compares two run files " +
			"(runs), and says per endpoint what changed and why: p95/p99 with confidence intervals, SQL per request " +
			"(N+1), upstream calls, answers. Verdict regression|improvement|unchanged|inconclusive; a regression is a " +
			"result, not an error. Sends progress notifications when given a progress token."},
		s.compare)
	mcp.AddTool(s.srv, &mcp.Tool{Name: "replay_report", Title: "Render a run or a comparison again", Annotations: ro, OutputSchema: anyReport,
		Description: "Reads a run file, or a comparison's output directory, again and reports it, optionally with more goals " +
			"or another sensitivity."},
		s.report)
	mcp.AddTool(s.srv, &mcp.Tool{Name: "replay_demo", Title: "Run the demo", OutputSchema: compareReport,
		Description: "Runs the whole flow on the demo workload (a small orders service on a throwaway PostgreSQL): records a " +
			"snapshot, then compares a build with an N+1 against the good one. Gives the comparison and the files " +
			"(snapshot, run files) to try the other tools on."},
		s.demo)
	mcp.AddTool(s.srv, &mcp.Tool{Name: "replay_version", Title: "replay's version", Annotations: ro,
		Description: "replay's module version, VCS revision and build time."},
		s.version)
}

// path resolves p as the children do.
func (s *Server) path(p string) string {
	if p == "" || filepath.IsAbs(p) || s.cfg.Dir == "" {
		return p
	}
	return filepath.Join(s.cfg.Dir, p)
}
