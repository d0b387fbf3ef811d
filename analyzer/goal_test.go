package analyzer

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/replaykit/replay/snapshots"
)

func TestParseGoal(t *testing.T) {
	tests := []struct {
		in   string
		want Goal
		exp  string
	}{
		{"p95<500ms", Goal{Text: "p95<500ms", Metric: "p95", Op: "<", Value: 500, Unit: "ms"}, "< 500 ms"},
		{" p99 < 1s ", Goal{Text: "p99 < 1s", Metric: "p99", Op: "<", Value: 1000, Unit: "ms"}, "< 1000 ms"},
		{"avg<=200ms", Goal{Text: "avg<=200ms", Metric: "avg", Op: "<=", Value: 200, Unit: "ms"}, "<= 200 ms"},
		{"p50<1.5ms", Goal{Text: "p50<1.5ms", Metric: "p50", Op: "<", Value: 1.5, Unit: "ms"}, "< 1.5 ms"},
		{"med<250us", Goal{Text: "med<250us", Metric: "p50", Op: "<", Value: 0.25, Unit: "ms"}, "< 0.25 ms"},
		{"max<2m", Goal{Text: "max<2m", Metric: "max", Op: "<", Value: 120000, Unit: "ms"}, "< 120000 ms"},
		{"P90<20", Goal{Text: "P90<20", Metric: "p90", Op: "<", Value: 20, Unit: "ms"}, "< 20 ms"},
		{"tps>50", Goal{Text: "tps>50", Metric: "tps", Op: ">", Value: 50, Unit: "req/s"}, "> 50 req/s"},
		{"rps>=50/s", Goal{Text: "rps>=50/s", Metric: "tps", Op: ">=", Value: 50, Unit: "req/s"}, ">= 50 req/s"},
		{"success>99%", Goal{Text: "success>99%", Metric: "success", Op: ">", Value: 99, Unit: "%"}, "> 99%"},
		{"success>=0.995", Goal{Text: "success>=0.995", Metric: "success", Op: ">=", Value: 99.5, Unit: "%"}, ">= 99.5%"},
		{"failed<1%", Goal{Text: "failed<1%", Metric: "failed", Op: "<", Value: 1, Unit: "%"}, "< 1%"},
		{"errors<5", Goal{Text: "errors<5", Metric: "errors", Op: "<", Value: 5}, "< 5"},
		{"failures<=2", Goal{Text: "failures<=2", Metric: "failed", Op: "<=", Value: 2}, "<= 2"},
		{"sql<=5", Goal{Text: "sql<=5", Metric: "sql", Op: "<=", Value: 5}, "<= 5"},
		{"GET /orders: p95<20ms", Goal{Text: "GET /orders: p95<20ms", Endpoint: "GET /orders", Metric: "p95", Op: "<", Value: 20, Unit: "ms"}, "< 20 ms"},
		{"GET /orders: sql<=5", Goal{Text: "GET /orders: sql<=5", Endpoint: "GET /orders", Metric: "sql", Op: "<=", Value: 5}, "<= 5"},
		{"POST /v1/items:batch: p99<1s", Goal{Text: "POST /v1/items:batch: p99<1s", Endpoint: "POST /v1/items:batch", Metric: "p99", Op: "<", Value: 1000, Unit: "ms"}, "< 1000 ms"},
		{"POST /graphql {allBooks}: sql<=3", Goal{Text: "POST /graphql {allBooks}: sql<=3", Endpoint: "POST /graphql {allBooks}", Metric: "sql", Op: "<=", Value: 3}, "<= 3"},
		{"POST  /graphql   {mutation createBook} : p95<20ms", Goal{Text: "POST  /graphql   {mutation createBook} : p95<20ms", Endpoint: "POST /graphql {mutation createBook}", Metric: "p95", Op: "<", Value: 20, Unit: "ms"}, "< 20 ms"},
		{"POST /rpc {user:get}: sql<=3", Goal{Text: "POST /rpc {user:get}: sql<=3", Endpoint: "POST /rpc {user:get}", Metric: "sql", Op: "<=", Value: 3}, "<= 3"},
		{"GET /orders/{id}:p95<20ms", Goal{Text: "GET /orders/{id}:p95<20ms", Endpoint: "GET /orders/{id}", Metric: "p95", Op: "<", Value: 20, Unit: "ms"}, "< 20 ms"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseGoal(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if got.Expected() != tt.exp {
				t.Errorf("Expected() = %q, want %q", got.Expected(), tt.exp)
			}
		})
	}
}

func TestParseGoalErrors(t *testing.T) {
	tests := []struct{ in, err string }{
		{"", `goal "": empty; want e.g. p95<500ms`},
		{"p95", `goal "p95": no operator; want one of <, <=, >, >= as in p95<500ms`},
		{"p95<abc", `goal "p95<abc": bad duration "abc": want e.g. 500ms, 1s or 250us`},
		{"p95<-5ms", `goal "p95<-5ms": bad duration "-5ms": want e.g. 500ms, 1s or 250us`},
		{"p95<", `goal "p95<": no value after "<"`},
		{"p95=5ms", `goal "p95=5ms": bad operator "="; want one of <, <=, >, >=`},
		{"p95!=5ms", `goal "p95!=5ms": bad operator "!="; want one of <, <=, >, >=`},
		{"<5ms", `goal "<5ms": no metric before "<"`},
		{"p42<5ms", `goal "p42<5ms": unknown metric "p42"; want avg, min, p50, p90, p95, p99, max, tps, success, failed, errors, sql or cpu`},
		{"success>101%", `goal "success>101%": bad percentage "101%": want e.g. 99%`},
		{"success>lots", `goal "success>lots": bad percentage "lots": want e.g. 99%`},
		{"failed<x%", `goal "failed<x%": bad percentage "x%": want e.g. 1%`},
		{"errors<many", `goal "errors<many": bad count "many": want a number of requests, or a percentage such as 1%`},
		{"tps>fast", `goal "tps>fast": bad rate "fast": want requests per second, e.g. 50`},
		{"sql<=few", `goal "sql<=few": bad number "few": want statements per request, e.g. 5`},
		{": p95<5ms", `goal ": p95<5ms": empty endpoint before ":"`},
		{"orders: p95<5ms", `goal "orders: p95<5ms": endpoint "orders" is not "METHOD /path"`},
		{"GET /orders:", `goal "GET /orders:": empty; want e.g. p95<500ms`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := ParseGoal(tt.in)
			if err == nil || err.Error() != tt.err {
				t.Errorf("err = %v\nwant %s", err, tt.err)
			}
		})
	}
	if _, err := ParseGoals([]string{"p95<1s", "p95<abc"}); err == nil {
		t.Error("ParseGoals with a bad goal: no error")
	}
}

func TestCheck(t *testing.T) {
	var rs []*snapshots.Result
	for i := range 100 {
		at := t0.Add(time.Duration(i) * 10 * time.Millisecond)
		ep, d, status := "GET /orders", time.Duration(i+1)*time.Millisecond, 200
		if i%4 == 0 {
			ep = "GET /orders/{id}"
		}
		if i == 99 {
			status = 500
		}
		rs = append(rs, &snapshots.Result{Phase: snapshots.PhaseLoad, Endpoint: ep, Intended: at, Sent: at, Done: at.Add(d),
			Status: status, RecordedStatus: 200, SQLCounted: ep == "GET /orders",
			SQL: []snapshots.SQLCount{{Fingerprint: "SELECT ?", Count: 6}}})
	}
	s, err := Summarize(context.Background(), snapshots.RunInfo{}, fromSlice(rs), SummarizeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	goals, err := ParseGoals([]string{
		"p95<500ms", "p99<50ms", "avg<=50.5ms", "max<99ms", "tps>50", "success>99%", "success>=98%", "failed<1%", "errors<2",
		"GET /orders: sql<=5", "GET /orders: p50<60ms", "GET /orders/{id}: sql<=5", "GET /missing: p95<1s", "get /orders/: p95<1s",
	})
	if err != nil {
		t.Fatal(err)
	}
	type res struct {
		Goal   string
		Passed bool
		Actual float64
		Reason string
	}
	var got []res
	for _, r := range Check(s, goals) {
		got = append(got, res{r.Goal, r.Passed, r.Actual, r.Reason})
	}
	want := []res{
		// Latency is over the 99 answered requests (1 to 99 ms): the failed
		// one (100 ms) is counted apart.
		{"p95<500ms", true, 94, ""},
		{"p99<50ms", false, 98, ""},
		{"avg<=50.5ms", true, 50, ""},
		{"max<99ms", false, 99, ""},
		{"tps>50", true, 100 / 1.09, ""}, // 100 requests from the first intended start to the last response (1.09 s)
		{"success>99%", false, 99, ""},
		{"success>=98%", true, 99, ""},
		{"failed<1%", false, 1, ""},
		{"errors<2", true, 1, ""},
		{"GET /orders: sql<=5", false, 6, ""},
		{"GET /orders: p50<60ms", true, 50, ""},
		{"GET /orders/{id}: sql<=5", false, 0, "SQL statements were not counted (no SQL counter in place)"},
		{"GET /missing: p95<1s", false, 0, `endpoint "GET /missing" is not in the run`},
		{"get /orders/: p95<1s", false, 0, `endpoint "get /orders/" is not in the run (closest: "GET /orders")`},
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if AllPassed(Check(s, goals)) || !AllPassed(nil) {
		t.Error("AllPassed wrong")
	}
}

func TestCheckOperationEndpoints(t *testing.T) {
	var rs []*snapshots.Result
	for i, ep := range []string{"POST /graphql {allBooks}", "POST /graphql {mutation createBook}", "POST /graphql {allBooks}"} {
		at := t0.Add(time.Duration(i) * 10 * time.Millisecond)
		rs = append(rs, &snapshots.Result{Phase: snapshots.PhaseLoad, Endpoint: ep, Intended: at, Sent: at, Done: at.Add(time.Millisecond),
			Status: 200, RecordedStatus: 200, SQLCounted: true, SQL: []snapshots.SQLCount{{Fingerprint: "SELECT ?", Count: 2}}})
	}
	s, err := Summarize(context.Background(), snapshots.RunInfo{}, fromSlice(rs), SummarizeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	goals, err := ParseGoals([]string{"POST /graphql {allBooks}: sql<=3", "POST /graphql {mutation createBook}: sql<2", "POST /graphql: sql<=3"})
	if err != nil {
		t.Fatal(err)
	}
	type res struct {
		Goal   string
		Passed bool
		Actual float64
		Reason string
	}
	var got []res
	for _, r := range Check(s, goals) {
		got = append(got, res{r.Goal, r.Passed, r.Actual, r.Reason})
	}
	want := []res{
		{"POST /graphql {allBooks}: sql<=3", true, 2, ""},
		{"POST /graphql {mutation createBook}: sql<2", false, 2, ""},
		{"POST /graphql: sql<=3", false, 0, `endpoint "POST /graphql" is not in the run (closest: "POST /graphql {allBooks}")`},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
