package main

import (
	"github.com/spf13/pflag"

	"github.com/replaykit/replay/snapshots"
)

// endpointByHelp is the help of --endpoint-by, the same on `replay record`
// and `replay snapshot import`.
const endpointByHelp = "name the operation of single-URL APIs by the JSON body's value at `json:$.PATH`, e.g. json:$.method gives 'POST /rpc {getUser}' (repeatable; GraphQL is split by operation without it)"

// addEndpointByFlag declares --endpoint-by.
func addEndpointByFlag(f *pflag.FlagSet, specs *[]string) {
	f.StringArrayVar(specs, "endpoint-by", nil, endpointByHelp)
}

// bodyRules parses the --endpoint-by specs of command cmd; its error is a
// usage error naming the flag.
func bodyRules(cmd string, specs []string) ([]snapshots.Rule, error) {
	var rules []snapshots.Rule
	for _, s := range specs {
		r, err := snapshots.ParseBodyRule(s)
		if err != nil {
			return nil, usagef("%s: --endpoint-by: %v", cmd, err)
		}
		rules = append(rules, r)
	}
	return rules, nil
}
