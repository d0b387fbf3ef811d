package main

import (
	"embed"
	"strings"
)

// The long help texts of the commands whose help is longest, kept as text
// beside the code; {{buildEnv}} stands for help/build-env.txt, what a
// build replay starts finds in its environment, the same for run and
// compare.
//
//go:embed help/*.txt
var helpFS embed.FS

// longHelp returns the long help of a command from help/NAME.txt.
func longHelp(name string) string {
	return strings.ReplaceAll(helpText(name), "{{buildEnv}}", helpText("build-env"))
}

func helpText(name string) string {
	b, _ := helpFS.ReadFile("help/" + name + ".txt") // embedded: TestLongHelp checks every one
	return strings.TrimSuffix(string(b), "\n")
}
