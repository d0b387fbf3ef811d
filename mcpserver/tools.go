package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaykit/replay/examples/orders/demo"
	"github.com/replaykit/replay/report"
	"github.com/replaykit/replay/session"
)

// Formats the tools ask for; the first goes to stdout.
const (
	formatJSON     = "--format=json"
	formatMarkdown = "--format=markdown"
	formatBoth     = "--format=json,markdown"
)

// result is a tool's result: structured content js (a command's JSON,
// passed on as it is), text first and notes after it.
func result(js []byte, text string, notes ...string) (*mcp.CallToolResult, any, error) {
	if !json.Valid(js) {
		return nil, nil, fmt.Errorf("replay printed no JSON (%d bytes)", len(js))
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
	for _, n := range notes {
		res.Content = append(res.Content, &mcp.TextContent{Text: n})
	}
	return res, json.RawMessage(js), nil
}

// checkArgs refuses extra flags that the tool sets itself.
func checkArgs(args []string) error {
	for _, a := range args {
		name, _, _ := strings.Cut(a, "=")
		switch name {
		case "--format", "--out", "--":
			return fmt.Errorf("args: %q: the tool sets %s itself (use its fields)", a, name)
		}
	}
	return nil
}

func (s *Server) inspect(ctx context.Context, req *mcp.CallToolRequest, in InspectInput) (*mcp.CallToolResult, any, error) {
	js, err := s.replay(ctx, req, "inspect", formatJSON, "--", in.Snapshot)
	if err != nil {
		return nil, nil, err
	}
	text, err := s.replay(ctx, req, "inspect", "--", in.Snapshot)
	if err != nil {
		return nil, nil, err
	}
	return result(js, string(text))
}

func (s *Server) run(ctx context.Context, req *mcp.CallToolRequest, in RunInput) (*mcp.CallToolResult, any, error) {
	if err := checkArgs(in.Args); err != nil {
		return nil, nil, err
	}
	js, err := s.replay(ctx, req, in.args(formatJSON)...)
	if err != nil {
		return nil, nil, err
	}
	md, err := s.replay(ctx, req, "report", formatMarkdown, "--", in.Out)
	if err != nil {
		return nil, nil, err
	}
	return result(js, string(md), "Run file: "+in.Out)
}

func (s *Server) compare(ctx context.Context, req *mcp.CallToolRequest, in CompareInput) (*mcp.CallToolResult, any, error) {
	if err := checkArgs(in.Args); err != nil {
		return nil, nil, err
	}
	if len(in.Runs) > 0 && in.Out == "" {
		// Offline and no directory: no files, as on the command line.
		return s.jsonAndMarkdown(ctx, req, in.args)
	}
	dir, made := in.Out, false
	if dir == "" {
		parent := s.cfg.Dir
		if parent == "" {
			parent = "."
		}
		var err error
		if dir, err = session.NewDir(parent, "replay-compare-"); err != nil {
			return nil, nil, fmt.Errorf("compare: output directory: %w", err)
		}
		made = true
	}
	js, err := s.replay(ctx, req, in.args(formatBoth, "--out="+dir)...)
	if err != nil {
		if made {
			os.RemoveAll(dir) // a failed command leaves no directory behind
		}
		return nil, nil, err
	}
	md, err := os.ReadFile(filepath.Join(s.path(dir), report.Markdown.FileName()))
	if err != nil {
		return nil, nil, fmt.Errorf("compare: %w", err)
	}
	return result(js, string(md), "Run files, build logs and reports: "+dir)
}

func (s *Server) report(ctx context.Context, req *mcp.CallToolRequest, in ReportInput) (*mcp.CallToolResult, any, error) {
	if err := checkArgs(in.Args); err != nil {
		return nil, nil, err
	}
	return s.jsonAndMarkdown(ctx, req, in.args)
}

// jsonAndMarkdown runs replay with args twice, for the JSON contract and
// then the Markdown Result block, writing no file.
func (s *Server) jsonAndMarkdown(ctx context.Context, req *mcp.CallToolRequest, args func(...string) []string) (*mcp.CallToolResult, any, error) {
	js, err := s.replay(ctx, req, args(formatJSON)...)
	if err != nil {
		return nil, nil, err
	}
	md, err := s.replayAs(ctx, req, undecidedReport(js), args(formatMarkdown)...)
	if err != nil {
		return nil, nil, err
	}
	return result(js, string(md))
}

func (s *Server) demo(ctx context.Context, req *mcp.CallToolRequest, in DemoInput) (*mcp.CallToolResult, any, error) {
	dir, made := in.Out, false
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "replay-demo-"); err != nil {
			return nil, nil, fmt.Errorf("demo: %w", err)
		}
		made = true
	}
	if _, err := s.replay(ctx, req, in.args(dir)...); err != nil {
		if made {
			os.RemoveAll(dir)
		}
		return nil, nil, err
	}
	cmp := filepath.Join(dir, demo.CompareDir)
	js, err := os.ReadFile(filepath.Join(s.path(cmp), report.JSON.FileName()))
	if err != nil {
		return nil, nil, fmt.Errorf("demo: %w", err)
	}
	md, err := os.ReadFile(filepath.Join(s.path(cmp), report.Markdown.FileName()))
	if err != nil {
		return nil, nil, fmt.Errorf("demo: %w", err)
	}
	return result(js, string(md), fmt.Sprintf("Snapshot: %s; run files, build logs and reports: %s",
		filepath.Join(dir, demo.SnapshotFile), cmp))
}

func (s *Server) version(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, VersionOutput, error) {
	out, err := s.replay(ctx, req, "version")
	if err != nil {
		return nil, VersionOutput{}, err
	}
	v := strings.TrimPrefix(strings.TrimSpace(string(out)), "replay ")
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "replay " + v}}}, VersionOutput{Version: v}, nil
}
