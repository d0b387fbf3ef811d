package main

import (
	"github.com/spf13/cobra"

	"github.com/replaykit/replay/mcpserver"
)

func newCmdMCP() *cobra.Command {
	return &cobra.Command{Use: "mcp", Short: "Serve replay's tools to coding agents: an MCP server over stdio", Long: longHelp("mcp"), Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return mcpserver.ServeStdio(cmd.Context(), mcpserver.Config{}) // this binary's tools, its version
		}}
}
