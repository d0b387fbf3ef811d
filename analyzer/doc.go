// Package analyzer turns replayed results into figures, goal outcomes and a
// verdict: it summarizes a run, checks goals against it, and compares a
// candidate run with a baseline endpoint by endpoint, explaining each change
// in one sentence from the evidence.
//
// Everything here is a pure function over results read from an iterator
// (snapshots.Run.Results, or any iter.Seq2[*snapshots.Result, error]); the
// package does no other I/O and renders nothing (see package report).
//
// # Summaries
//
// Summarize reads a run once, in bounded memory: per endpoint two
// HdrHistograms (latency from the intended start, snapshots.Result.Latency,
// and from the actual send, ServiceTime; 1 µs to 1 h, three significant
// digits) and a uniform reservoir sample of SummarizeOptions.SampleSize
// results (8000 by default) for the bootstrap. While an endpoint's sample
// holds all of its results, percentiles are exact; beyond, they come from
// the histogram, at most 0.1% high. Percentiles are nearest-rank. Averages,
// minimums and maximums are always exact.
//
// Load-phase results give request counts, failures, throughput (requests
// over the load phase's span, from the first intended start to the last
// response; in a sliced run with gaps between its slices, the sum of the
// slices' spans) and latency. SQL figures come from results whose statements were
// counted (SQLCounted): the explain phase, when there was one, is the exact
// source (requests replayed one at a time); otherwise the load phase (exact
// with sqlcommenter attribution, else what the counter could attribute).
// SQLStats.Source says which. Database time under load comes from the load
// phase when it was counted (EndpointSummary.DBTime).
//
// # Goals
//
// ParseGoal reads goals such as "p95<500ms", "tps>50", "success>99%",
// "failed<1%", "errors<5", "sql<=5" and "GET /orders: p95<20ms"; Check
// evaluates them, reporting the actual value in the goal's unit and why a
// goal could not be measured (an endpoint not in the run fails).
//
// # Comparison
//
// Compare judges each endpoint present in either run. Its verdict is a
// regression when any of the following holds, an improvement when one holds
// in the better direction and none in the worse, inconclusive when latency
// could not be judged (fewer than MinSamples, 30, load requests on a side) or
// changed by at least the minimums but not beyond the noise, or when the
// p95 interval reaches past the minimums (the run cannot rule out a change
// that counts; Change.MinDetectable says the smallest it could have seen:
// exp of the interval's half-width on the log scale, at least the
// minimums), and unchanged when the whole p95 interval lies inside them:
//
//   - Latency (p95, and p99 when both sides have at least 500 requests). The
//     change must pass three tests. (1) Beyond the noise: a bootstrap
//     confidence interval (99%, 2000 resamples, fixed seed, so a comparison
//     is reproducible) of the candidate/baseline ratio of the percentile must
//     exclude 1. When both runs were interleaved in slices (Result.Slice > 0
//     throughout, at least MinBlocks = 8 slices each; the replayer should
//     use 10 to 20) the bootstrap resamples slice pairs — the i-th slice of
//     the baseline with the i-th of the candidate, whole slices at a time —
//     so that machine drift shared by a pair cancels and the variation
//     between slices widens the interval; otherwise each side is resampled
//     independently. (2) As a guard that holds for any sample
//     size and distribution, the sides' distribution-free intervals of the
//     percentile (binomial order statistics, 99% each) must not overlap.
//     (3) Large enough to matter: at least MinChange (5 ms; 10 ms for the
//     p99) and MinRelative (10%; 25% for the p99). Sequential runs share no
//     slices, and separate runs of one build differ by tens of percent on a
//     noisy machine, so without interleaving (or with fewer than 8 slice
//     pairs, too few to resample) the relative minimum is raised to
//     MinRelativeSequential (50%).
//   - SQL statements per request (each side's preferred source). With exact
//     counts on both sides (explain phase), a rise of at least
//     MinSQLIncrease (1 statement per request) is a regression on its own,
//     whatever the latency. With load-phase counts on either side the rise
//     must also be at least 50%.
//   - Upstream calls per request (the calls to mocked services each request
//     made, attributed by the mock like statements: UpstreamStats, the explain
//     phase preferred): as SQL statements, a rise of at least
//     MinUpstreamIncrease (1 call per request), with load-phase counts on
//     either side also at least 50%.
//   - Failures: the failure rate rose by at least MinFailureIncrease (1
//     percentage point) and a one-sided two-proportion z test gives
//     z ≥ 2.58.
//
// The overall verdict is a regression when any endpoint regressed; else an
// improvement when any improved; else unchanged when at least one endpoint
// was judged unchanged; else inconclusive (nothing could be judged).
//
// Measured on synthetic interleaved runs much noisier than a comparison
// should be (machine drift per slice of 25% shared by both sides, another
// 10% per slice and side alone, 2% of requests paused up to 30 ms; three
// endpoints, 6000 requests per run), the same build on both sides gave 1
// regression in 900 endpoint comparisons (a p95 of 142 ms read as 166 ms)
// and 0 in 600 more; 50 ms added to an endpoint with a p95 of a few
// milliseconds was found in 100 of 100 runs, interleaved, sequential, and
// with only 60 requests per endpoint and side; +8 ms on a 3 ms median in 60
// of 60 (+5 ms, the minimum, in 29 of 60); a 30% slower endpoint with a p95
// of 150 ms in 59 of 60 (20%: 47 of 60).
//
// # Explanations
//
// Every endpoint gets one sentence with numbers. For a regression, in order
// of precedence: an N+1 — a statement with a parameter that the candidate
// runs at least NPlusOneMin (3) times per request and more than twice as
// often (plus one) as the baseline ("N+1: `SELECT … FROM order_items WHERE
// order_id = ?` runs 50 times per request (baseline 0), adding 10 ms
// database time per request; p95 rose …"); more statements per request,
// naming them and the database time they add; an HTTP N+1 — an upstream
// endpoint the candidate calls at least NPlusOneMin times per request and
// more than twice as often (plus one) as the baseline ("HTTP N+1: `GET
// /catalog` calls `catalog.test GET /products/{id}` 20 times per request
// (baseline 1)"), also named after the SQL evidence when both rose; more
// upstream calls per request, naming them; failures, naming the commonest
// and the mock misses the candidate added; upstream time per request, when
// it grew by at least 1 ms and half the mean latency's growth; slower
// statements, when database time per request grew by at least half the mean
// latency's growth ("`…` got slower: 3.1 ms → 45 ms per call (+41.9 ms
// database time per request)"); else latency not from the database ("p95
// rose 4.1 ms → 54.3 ms (+50.2 ms, CI ×11.8–×13.5) with no change in SQL
// statements or database time: the slowdown is in the app"). Only counts per
// fingerprint are known, not rows, so an N+1 is recognised by a
// parameterised statement repeated per request, not by matching the row
// count of another.
//
// It does not replay, record or render; it does not read files other than
// through the iterator it is given.
package analyzer
