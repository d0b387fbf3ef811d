package mock

import (
	"context"
	"fmt"

	"github.com/replaykit/replay/snapshots"
)

// Load reads the outbound exchanges of a snapshot, for Config.Exchanges.
func Load(ctx context.Context, snap *snapshots.Snapshot) ([]*snapshots.Exchange, error) {
	var out []*snapshots.Exchange
	for e, err := range snap.Exchanges(ctx, snapshots.Filter{Direction: snapshots.Outbound}) {
		if err != nil {
			return nil, fmt.Errorf("load outbound exchanges from %s: %w", snap.Path(), err)
		}
		out = append(out, e)
	}
	return out, nil
}

// LoadFile reads the outbound exchanges of the snapshot at path (see Load)
// and its endpoint rules (Config.Rules).
func LoadFile(ctx context.Context, path string) ([]*snapshots.Exchange, []snapshots.Rule, error) {
	snap, err := snapshots.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer snap.Close()
	exs, err := Load(ctx, snap)
	if err != nil {
		return nil, nil, err
	}
	rules, err := snap.Rules()
	if err != nil {
		return nil, nil, err
	}
	return exs, rules, nil
}
