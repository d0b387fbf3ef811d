// Package mcpserver is replay's Model Context Protocol server: the tools a
// coding agent calls (replay_inspect, replay_run, replay_compare,
// replay_report, replay_demo, replay_version) over the official Go SDK
// (github.com/modelcontextprotocol/go-sdk).
//
// Each tool call runs the replay binary (Config.Replay) as a child process
// with arguments built from the call's typed input, so every flag is
// validated, and every exit code given, as on the command line; a
// cancelled call interrupts the child, and one bad run cannot take the
// server down. A call's structured content is the JSON the command prints
// with --format json (the report's JSON contract, unchanged) and its text
// the Markdown report (the "### Result" block a pull request shows). Exit
// 99 (a regression, missed goals) is a result, not an error, and so is
// exit 1 with a report that could not decide (its JSON "undecided": no
// endpoint judged, a wiring fault, a goal not evaluated) or was
// interrupted; any other failure is a tool error (IsError) whose text is
// the child's one-line message. The child writes its progress as JSON lines on stderr
// (REPLAY_PROGRESS=json, report.ProgressEvent), which become progress
// notifications when the client asked for them with a progress token.
// ServeStdio answers every call it read: when stdin ends, the calls still
// running finish and their answers are written before it returns.
//
// It does not replay anything itself, nor keep state between calls: the
// files a call names or writes are the state.
package mcpserver
