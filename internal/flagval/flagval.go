// Package flagval holds flag values shared by replay's commands.
package flagval

import (
	"fmt"
	"strconv"
)

// AutoInt is an int flag whose negative value means "chosen from the
// other flags"; its help shows no default. V points at the int.
type AutoInt struct{ V *int }

func (a AutoInt) String() string {
	if a.V == nil || *a.V < 0 {
		return ""
	}
	return strconv.Itoa(*a.V)
}

// Set takes a number of 0 or more.
func (a AutoInt) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return fmt.Errorf("want a number of 0 or more, got %q", s)
	}
	*a.V = n
	return nil
}

// Type is the flag's type in help.
func (a AutoInt) Type() string { return "int" }
