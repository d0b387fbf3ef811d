package main

import (
	"strings"
	"testing"
)

// TestLongHelp: every command whose long help is kept in help/ shows it,
// with the build environment where the text asks for it.
func TestLongHelp(t *testing.T) {
	for cmd, want := range map[string][]string{
		"compare": {"compare replays the same recorded requests", "PORT                               a free port", "Exit codes:"},
		"run":     {"run replays the snapshot's recorded inbound requests", "REPLAY_SQLCOUNT_ADDR", "Exit codes:"},
		"record":  {"record puts recording proxies around a running app", "--from-pcap"},
		"mock":    {"mock answers the calls an app makes", "--serve LISTEN=HOST:PORT"},
		"report":  {"report renders what replay measured again", "Exit codes:"},
		"demo":    {"demo runs replay's whole flow on the demo workload", "`replay demo orders`", "orders      Run the demo's orders service"},
		"demo orders": {"DATABASE_URL     PostgreSQL URL (required)", "APP_SLOW=1       GET /orders runs one query per order", "APP_DELAY", "APP_CHANGE",
			"APP_UPSTREAM_N1", "CATALOG_URL", "PORT, HOST"},
		"":                {"`replay demo orders`", "APP_SLOW=1", "replay demo orders --help"},
		"ca":              {"ca creates replay's certificate authority on first use", "DIR/ca-key.pem"},
		"inspect":         {"inspect summarizes a snapshot", "while replay\nrecord is still writing it"},
		"sqlcount":        {"sqlcount is a database wire-protocol proxy", "--protocol says which database it is", "clients need --tls)."},
		"snapshot":        {"snapshot converts snapshots to and from portable formats", "import as inbound exchanges."},
		"snapshot export": {"export writes every exchange and SQL statement", "may be left out when FILE ends in .jsonl, .ndjson or .har."},
		"k8s":             {"k8s runs one replay plan as N shards on Kubernetes", "kubectl apply -f replay.yaml"},
		"k8s manifest":    {"manifest prints, as YAML for kubectl apply", "podReplacementPolicy"},
		"k8s collect":     {"collect reads the Job's pods", "Exit codes:"},
		"snapshot import": {"import creates the snapshot SNAP from FILE", "--direction outbound imports a HAR"},
	} {
		code, stdout, _ := cliRun(t, "", append(strings.Fields(cmd), "--help")...)
		if code != 0 || strings.Contains(stdout, "{{") {
			t.Errorf("%s --help: exit %d, placeholders left: %v", cmd, code, strings.Contains(stdout, "{{"))
		}
		for _, w := range want {
			if !strings.Contains(stdout, w) {
				t.Errorf("%s --help lacks %q", cmd, w)
			}
		}
	}
}
