// Package k8s runs a sharded replay on Kubernetes: Manifest prints a
// headless Service and an Indexed Job whose N pods each run one shard of
// the plan (replay run --shard with the barrier at shard 0's DNS name and
// --print-run), and Collect reads the Job's pods' logs back, checks that
// every shard is there and none failed, and merges their run files
// (shard.Merge) into one.
//
// It is the only package of replay that imports k8s.io: the objects are
// the typed ones of k8s.io/api, serialised with sigs.k8s.io/yaml, and
// Collect uses client-go.
package k8s
