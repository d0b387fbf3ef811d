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
