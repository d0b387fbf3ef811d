package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: replaced by the real command.
func newCmdInspect(s streams) *cobra.Command {
	return &cobra.Command{
		Use:   "inspect",
		Short: "(not built yet)",
		RunE:  func(cmd *cobra.Command, args []string) error { return errors.New("inspect: not built yet") },
	}
}
