package shard

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/replaykit/replay/snapshots"
)

// Refusals of Merge (errors.Is); the error names the run files at fault.
var (
	// ErrMismatch: the runs are shards of different plans (hash, number
	// of shards or histogram parameters differ).
	ErrMismatch = errors.New("shards of different plans")
	// ErrMissing: a shard of the plan is not among the runs.
	ErrMissing = errors.New("shard missing")
	// ErrDuplicate: two runs are the same shard.
	ErrDuplicate = errors.New("shard given twice")
)

// shardRun is one open shard run file.
type shardRun struct {
	path string
	run  *snapshots.Run
	spec Spec
	plan string
}

// Merge writes to out (which must not exist) one run file holding every
// result of the shard run files runs, exactly: raw results, their SQL and
// upstream calls, the response samples and hashes, the mock misses,
// statements, load SQL, wiring and truncation counts added up. It refuses
// runs of different plans (ErrMismatch), a missing shard (ErrMissing) and a
// shard given twice (ErrDuplicate), before writing anything. The merged
// file is an ordinary run file: summaries, goals and verdicts are computed
// from it as from a single process's.
func Merge(ctx context.Context, out string, runs []string) error {
	shards, err := open(runs)
	defer func() {
		for _, s := range shards {
			s.run.Close()
		}
	}()
	if err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	if err := check(shards); err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	slices.SortFunc(shards, func(a, b *shardRun) int { return a.spec.K - b.spec.K })
	infos := make([]snapshots.RunInfo, len(shards))
	for i, s := range shards {
		infos[i] = s.run.Info()
	}
	info := mergeInfo(infos)
	w, err := snapshots.CreateRun(out, info)
	if err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	err = copyAll(ctx, w, shards)
	if cerr := w.Close(info); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("merge into %s: %w", out, err)
	}
	return nil
}

// open opens every run file and reads its tags.
func open(paths []string) ([]*shardRun, error) {
	if len(paths) == 0 {
		return nil, errors.New("no run files to merge")
	}
	var out []*shardRun
	for _, p := range paths {
		r, err := snapshots.OpenRun(p)
		if err != nil {
			return out, err
		}
		s := &shardRun{path: p, run: r}
		out = append(out, s)
		if s.spec, s.plan, err = FromInfo(r.Info()); err != nil {
			return out, fmt.Errorf("%s: %w (written by replay run --shard k/N)", p, err)
		}
	}
	return out, nil
}

// check refuses shards of different plans, duplicates and missing ones.
func check(shards []*shardRun) error {
	first := shards[0]
	hist := first.run.Info().Settings[TagHistogram]
	seen := map[int]string{}
	for _, s := range shards {
		switch {
		case s.plan != first.plan:
			return fmt.Errorf("%w: %s has plan %s, %s has plan %s", ErrMismatch, first.path, first.plan, s.path, s.plan)
		case s.spec.N != first.spec.N:
			return fmt.Errorf("%w: %s is a shard of %d, %s of %d", ErrMismatch, first.path, first.spec.N, s.path, s.spec.N)
		case s.run.Info().Settings[TagHistogram] != hist:
			return fmt.Errorf("%w: %s and %s have different histogram parameters", ErrMismatch, first.path, s.path)
		}
		if p, ok := seen[s.spec.K]; ok {
			return fmt.Errorf("%w: shard %s is both %s and %s", ErrDuplicate, s.spec, p, s.path)
		}
		seen[s.spec.K] = s.path
	}
	var missing []string
	for k := range first.spec.N {
		if _, ok := seen[k]; !ok {
			missing = append(missing, Spec{K: k, N: first.spec.N}.String())
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: no run file for shard %s of plan %s", ErrMissing, strings.Join(missing, ", "), first.plan)
	}
	return nil
}

// copyAll writes every shard's results to w in order of intended start,
// then their response samples and hashes.
func copyAll(ctx context.Context, w *snapshots.RunWriter, shards []*shardRun) error {
	type head struct {
		res  *snapshots.Result
		next func() (*snapshots.Result, error, bool)
		stop func()
	}
	var heads []*head
	defer func() {
		for _, h := range heads {
			h.stop()
		}
	}()
	advance := func(h *head) error {
		res, err, ok := h.next()
		if !ok {
			res = nil
		}
		h.res = res
		return err
	}
	for _, s := range shards {
		next, stop := iter.Pull2(s.run.Results(ctx))
		h := &head{next: next, stop: stop}
		heads = append(heads, h)
		if err := advance(h); err != nil {
			return err
		}
	}
	for {
		var min *head
		for _, h := range heads {
			if h.res != nil && (min == nil || h.res.Intended.Before(min.res.Intended)) {
				min = h
			}
		}
		if min == nil {
			break
		}
		r := min.res
		r.Seq = 0
		w.Add(r)
		if err := advance(min); err != nil {
			return err
		}
	}
	for _, s := range shards {
		if err := s.run.Responses(func(rs *snapshots.ResponseSample) error { w.AddResponse(rs); return nil }); err != nil {
			return err
		}
		var hs []snapshots.ResponseHash
		err := s.run.ResponseHashes(func(h snapshots.ResponseHash) error {
			if hs = append(hs, h); len(hs) == 1000 {
				w.AddResponseHashes(hs)
				hs = hs[:0]
			}
			return nil
		})
		if err != nil {
			return err
		}
		w.AddResponseHashes(hs)
	}
	return nil
}
