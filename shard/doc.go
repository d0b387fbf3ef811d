// Package shard spreads one load plan over several processes or machines
// and brings their results back together exactly.
//
// A shard is one of N processes running the same plan: shard k sends the
// recorded requests at positions i with i mod N = k, runs the closed
// model's virtual users j with j mod N = k and, in the open model, the
// arrivals n with n mod N = k at the single-machine schedule's times (the
// replayer does the partition: replayer.Config.Shard). Every shard writes
// an ordinary run file whose settings carry the tags of this package (the
// plan's hash, k, N, the histogram parameters), and Merge makes one run
// file of them: raw results, counts, SQL, failures, mock misses and
// response samples add up; goals and verdicts are computed afterwards from
// the merged file, never from the shards' figures.
//
// Shards start together: Barrier (shard 0 listens on TCP, the others
// connect; shard 0 sends one start time T0 when all are there). Local runs
// N child processes of the same binary on one machine.
package shard
