package replayer

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseRate(t *testing.T) {
	tests := []struct {
		in      string
		want    Rate
		perSec  float64
		wantErr string
	}{
		{"200/s", Rate{200, time.Second}, 200, ""},
		{"50/1s", Rate{50, time.Second}, 50, ""},
		{"1000/m", Rate{1000, time.Minute}, 1000.0 / 60, ""},
		{"10/100ms", Rate{10, 100 * time.Millisecond}, 100, ""},
		{"300", Rate{300, time.Second}, 300, ""},
		{"0/s", Rate{}, 0, "positive number"},
		{"x/s", Rate{}, 0, "positive number"},
		{"5/fortnight", Rate{}, 0, "unit"},
		{"5/-1s", Rate{}, 0, "unit"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseRate(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want || got.PerSecond() != tt.perSec {
				t.Fatalf("ParseRate(%q) = %v (%g/s), %v; want %v", tt.in, got, got.PerSecond(), err, tt.want)
			}
			if back, err := ParseRate(got.String()); err != nil || back != got {
				t.Errorf("String %q does not parse back: %v %v", got.String(), back, err)
			}
		})
	}
}

func TestParseStage(t *testing.T) {
	got, err := ParseStage(" 30s:10 ")
	if err != nil || got != (Stage{30 * time.Second, 10}) {
		t.Fatalf("got %v %v", got, err)
	}
	for _, bad := range []string{"30s", "x:1", "30s:-1", "0s:3", "1m:many"} {
		if _, err := ParseStage(bad); err == nil {
			t.Errorf("ParseStage(%q) accepted", bad)
		}
	}
}

func TestVUsAt(t *testing.T) {
	stages := []Stage{{time.Second, 10}, {time.Second, 20}, {time.Second, 5}}
	for _, tt := range []struct {
		at   time.Duration
		want int
	}{{0, 0}, {500 * time.Millisecond, 5}, {time.Second, 10}, {1500 * time.Millisecond, 15}, {2500 * time.Millisecond, 13}, {4 * time.Second, 5}} {
		if got := vusAt(0, stages, tt.at); got != tt.want {
			t.Errorf("vusAt(%s) = %d, want %d", tt.at, got, tt.want)
		}
	}
}

func TestValidatePlan(t *testing.T) {
	ok := []LoadPlan{
		{},
		{VUs: 10, Duration: time.Second},
		{VUs: 2, Iterations: 3, Duration: time.Second},
		{Rate: Rate{10, time.Second}, Duration: time.Second},
		{Rate: Rate{10, time.Second}, Iterations: 2},
		{Speed: 0.5},
		{Stages: []Stage{{time.Second, 3}}, VUs: 1},
	}
	for _, p := range ok {
		if err := p.Validate(); err != nil {
			t.Errorf("%+v: %v", p, err)
		}
	}
	bad := []struct {
		p    LoadPlan
		want string
	}{
		{LoadPlan{Rate: Rate{10, time.Second}, Speed: 1}, "rate and speed"},
		{LoadPlan{Rate: Rate{10, time.Second}, VUs: 3}, "give one model"},
		{LoadPlan{Speed: 1, Stages: []Stage{{time.Second, 1}}}, "give one model"},
		{LoadPlan{Stages: []Stage{{time.Second, 1}}, Duration: time.Second}, "stages set the duration"},
		{LoadPlan{Stages: []Stage{{time.Second, 1}}, Iterations: 1}, "stages set the duration"},
		{LoadPlan{VUs: -1}, "negative"},
		{LoadPlan{Speed: -2}, "negative"},
		{LoadPlan{Rate: Rate{5, 0}}, "not a positive rate"},
		{LoadPlan{Stages: []Stage{{0, 1}}}, "stage"},
	}
	for _, tt := range bad {
		err := tt.p.Validate()
		if !errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: err = %v, want ErrPlan mentioning %q", tt.p, err, tt.want)
		}
	}
}

func TestGlob(t *testing.T) {
	for _, tt := range []struct {
		p, s string
		want bool
	}{
		{"GET /orders", "GET /orders", true},
		{"GET /orders", "GET /orders/{id}", false},
		{"GET /orders*", "GET /orders/{id}/status", true},
		{"* /orders/{id}", "DELETE /orders/{id}", true},
		{"GET /?", "GET /a", true},
		{"GET /?", "GET /ab", false},
		{"*a*b*", "xxaxxbxx", true},
		{"*a*b", "xxaxxbxxc", false},
		{"", "", true},
	} {
		if got := glob(tt.p, tt.s); got != tt.want {
			t.Errorf("glob(%q, %q) = %v, want %v", tt.p, tt.s, got, tt.want)
		}
	}
}
