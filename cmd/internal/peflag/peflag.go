// Package peflag parses the repeatable -pe key=value flag that sets a positional scheme's
// options from the command line (cmd/train, cmd/pe).
package peflag

import (
	"fmt"
	"strconv"
	"strings"
)

// Options collects -pe key=value flags. Values that parse as numbers become float64 and
// true/false become bool, as they would be when read from config.json; the rest stay strings.
type Options map[string]any

// String implements flag.Value.
func (p Options) String() string { return fmt.Sprint(map[string]any(p)) }

// Set implements flag.Value.
func (p Options) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want key=value, got %q", s)
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		p[k] = f
	} else if b, err := strconv.ParseBool(v); err == nil {
		p[k] = b
	} else {
		p[k] = v
	}
	return nil
}
