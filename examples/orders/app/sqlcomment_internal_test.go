package app

import "testing"

func TestValidTraceparent(t *testing.T) {
	tests := []struct {
		tp   string
		want bool
	}{
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", true},
		{"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", true},
		{"", false},
		{"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", false},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 ", false},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01", false},
		{"00-4bf92f3577b34da6a3ce929d0e0e47*/-00f067aa0ba902b7-01", false},
		{"*/ DROP TABLE orders; /*", false},
	}
	for _, tt := range tests {
		if got := validTraceparent(tt.tp); got != tt.want {
			t.Errorf("validTraceparent(%q) = %v, want %v", tt.tp, got, tt.want)
		}
	}
}
