package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// exactArgs checks that a command is given n arguments, what says what
// they are ("the snapshot"); its error is a usage error naming the
// command and what it expects: `report: expects 1 argument (the run file
// or the comparison's directory), got none`.
func exactArgs(n int, what ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == n {
			return nil
		}
		if n == 0 {
			return usagef("%s: takes no arguments, got %s", commandName(cmd), gotArgs(args))
		}
		return usagef("%s: expects %s, got %s", commandName(cmd), argCount(n, what), gotArgs(args))
	}
}

// minArgs is exactArgs for a command that takes at least n arguments.
func minArgs(n int, what ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) >= n {
			return nil
		}
		return usagef("%s: expects at least %s, got %s", commandName(cmd), argCount(n, what), gotArgs(args))
	}
}

// commandName is the command as a user types it after replay: "snapshot
// export".
func commandName(cmd *cobra.Command) string {
	path := cmd.CommandPath()
	if cmd.HasParent() {
		path = strings.TrimPrefix(path, cmd.Root().Name()+" ")
	}
	return path
}

// argCount is "1 argument (the snapshot)".
func argCount(n int, what []string) string {
	s := plural(int64(n), "argument")
	if len(what) > 0 {
		s += " (" + strings.Join(what, ", ") + ")"
	}
	return s
}

// gotArgs is what a command was given: "none", or the arguments quoted.
func gotArgs(args []string) string {
	if len(args) == 0 {
		return "none"
	}
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = strconv.Quote(a)
	}
	return strings.Join(q, " ")
}

// plural is "1 thing" or "n things".
func plural(n int64, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
