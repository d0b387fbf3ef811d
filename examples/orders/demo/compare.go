package demo

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/replaykit/replay/internal/ca"
	"github.com/replaykit/replay/internal/pgcluster"
	"github.com/replaykit/replay/internal/shell"
	"github.com/replaykit/replay/mock"
	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/report"
	"github.com/replaykit/replay/session"
)

// compare compares APP_SLOW=0 with APP_SLOW=1 on the snapshot snap through
// Config.Compare, or session.Compare when it is nil.
func (r *runner) compare(ctx context.Context, authority *ca.CA, pg *pgcluster.Cluster, snap string) (*report.ComparisonReport, error) {
	cfg, err := r.compareConfig(ctx, authority, pg, snap)
	if err != nil {
		return nil, err
	}
	if r.cfg.Compare != nil {
		rep, err := r.cfg.Compare(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("demo: %w", err)
		}
		return rep, nil
	}
	res, err := session.Compare(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	return res.Report, nil
}

// compareConfig is the comparison as `replay compare` runs it with the
// demo's flags: both builds started by replay, the catalog mocked, SQL
// counted in front of the cluster, and the database reset before each
// side.
func (r *runner) compareConfig(ctx context.Context, authority *ca.CA, pg *pgcluster.Cluster, snap string) (session.CompareConfig, error) {
	inbound, outbound, err := session.Load(ctx, snap, true)
	if err != nil {
		return session.CompareConfig{}, fmt.Errorf("demo: %w", err)
	}
	dbURL, dbAddr, d := pg.URL("postgres"), pg.Addr(), r.cfg.Duration
	// The builds run this binary by its path; reports name it as a user
	// types it.
	build, shown := shell.Quote(r.cfg.Replay)+" demo orders", "replay demo orders"
	reset := fmt.Sprintf("DATABASE_URL=%s %s demo reset --orders %d", shell.Quote(dbURL), shell.Quote(r.cfg.Replay), Orders)
	plan := replayer.ComparePlan{Load: replayer.LoadPlan{VUs: session.DefaultVUs, Duration: d}, Explain: session.DefaultExplain, Warmup: session.DefaultWarmup,
		Calibrate: session.DefaultCalibrate}
	return session.CompareConfig{
		Config: session.Config{
			Snapshot: snap, Inbound: inbound,
			Env:      []string{"DATABASE_URL=" + dbURL, "CATALOG_URL=https://" + CatalogHost},
			Mock:     &mock.Config{Exchanges: outbound, Services: []string{catalogAddr}},
			CADir:    authority.Dir(),
			Postgres: &session.Postgres{Upstream: dbAddr},
			Warn:     r.cfg.Warn,
		},
		Baseline:  session.SideConfig{Name: "baseline", Cmd: build, CmdShown: shown, Env: []string{"APP_SLOW=0"}},
		Candidate: session.SideConfig{Name: "candidate", Cmd: build, CmdShown: shown, Env: []string{"APP_SLOW=1"}},
		Dir:       filepath.Join(r.cfg.Dir, CompareDir),
		Plan:      plan,
		Reset:     reset,
	}, nil
}
