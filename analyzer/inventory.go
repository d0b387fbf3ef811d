package analyzer

import (
	"context"
	"fmt"
	"math"

	"github.com/replaykit/replay/snapshots"
)

// InventorySQL fills the SQL figures of inv's inbound endpoints from s
// (SQLPerRequest, SQLMethod, SQLMargin) with EstimateSQL: exact where
// every statement was attributed, else estimated, so that an endpoint whose
// requests overlapped unattributed statements never shows an exact zero.
// A snapshot that holds no statement at all had no SQL captured (or none
// to capture): its inbound endpoints are SQLMethodNotCounted, no exact zero
// either.
func InventorySQL(ctx context.Context, s *snapshots.Snapshot, inv *snapshots.Inventory) error {
	if inv.Statements == 0 && inv.Capture.Statements == 0 {
		for i := range inv.Endpoints {
			if x := &inv.Endpoints[i]; x.Direction == snapshots.Inbound {
				x.SQLMethod, x.SQLPerRequest, x.SQLMargin = SQLMethodNotCounted, 0, 0
			}
		}
		return nil
	}
	spans, h, err := s.SQLSpans(ctx)
	if err != nil {
		return fmt.Errorf("estimate SQL: %w", err)
	}
	ests := map[string]SQLEstimate{}
	for _, e := range EstimateSQL(spans, h) {
		ests[e.Key] = e
	}
	for i := range inv.Endpoints {
		x := &inv.Endpoints[i]
		if x.Direction == snapshots.Outbound {
			continue
		}
		e, ok := ests[snapshots.InventoryKey(x.Service, x.Endpoint)]
		if !ok {
			continue
		}
		x.SQLMethod = e.Method
		x.SQLPerRequest = round3(e.PerRequest)
		x.SQLMargin = round3(e.Margin)
	}
	return nil
}

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }
