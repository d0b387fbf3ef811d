package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: replaced by the real command.
func newCmdDemo(s streams) *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "(not built yet)",
		RunE:  func(cmd *cobra.Command, args []string) error { return errors.New("demo: not built yet") },
	}
}
