package shard

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestOptionsSetup(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == IndexEnv {
				return v
			}
			return ""
		}
	}
	for _, tc := range []struct {
		o    Options
		env  string
		want Spec
		addr string
		err  string
	}{
		{o: Options{}, want: Spec{}},
		{o: Options{Shard: "2/3", Barrier: "s0.svc:7070"}, want: Spec{2, 3}, addr: "s0.svc:7070"},
		{o: Options{Shard: "/4"}, env: "3", want: Spec{3, 4}},
		{o: Options{Shard: "1/4"}, env: "3", want: Spec{1, 4}}, // k given wins
		{o: Options{Shard: "/4"}, err: "$JOB_COMPLETION_INDEX is not set"},
		{o: Options{Shard: "/4"}, env: "4", err: `$JOB_COMPLETION_INDEX "4" must be a whole number from 0 to 3`},
		{o: Options{Shard: "3/3"}, err: `k "3" must be a whole number from 0 to 2`},
		{o: Options{Shard: "1/0"}, err: "N must be a whole number ≥ 1"},
		{o: Options{Shard: "1"}, err: "want k/N"},
		{o: Options{Barrier: "h:1"}, err: "--barrier needs --shard"},
		{o: Options{Shards: 3}, err: "--shards 3 needs --local"},
		{o: Options{Local: true}, err: "--local needs --shards N"},
		{o: Options{Local: true, Shards: 2, Shard: "0/2"}, err: "give one"},
	} {
		if tc.o.Wait == 0 {
			tc.o.Wait = time.Minute
		}
		b, err := tc.o.Setup(env(tc.env))
		switch {
		case tc.err != "":
			if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tc.err) || strings.HasPrefix(err.Error(), "bad shard flags") {
				t.Errorf("%+v: %v; want a usage error saying %q", tc.o, err, tc.err)
			}
		case err != nil:
			t.Errorf("%+v: %v", tc.o, err)
		case !tc.want.Sharded() && b != nil:
			t.Errorf("%+v: barrier %+v; want none", tc.o, b)
		case tc.want.Sharded() && (b == nil || b.Spec != tc.want || b.Addr != tc.addr):
			t.Errorf("%+v: barrier %+v; want %v at %q", tc.o, b, tc.want, tc.addr)
		}
	}
}

func TestChildArgs(t *testing.T) {
	got := strings.Join(childArgs([]string{"run", "--snapshot", "s", "--shards", "3", "--local", "--out=r.run", "--format", "json,text",
		"--vus", "6", "--dashboard", ":0", "--goal", "p99<1s"}), " ")
	if want := "run --snapshot s --vus 6 --goal p99<1s"; got != want {
		t.Errorf("child args %q, want %q", got, want)
	}
}
