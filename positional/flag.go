package positional

import (
	"fmt"
	"strconv"
	"strings"
)

// OptionFlag collects repeatable key=value command-line flags (-pe base=10000 -pe
// layout=interleaved) into scheme options. Values that parse as numbers become float64 and
// true/false become bool, as they would be when read from config.json; the rest stay strings.
type OptionFlag map[string]any

// String implements flag.Value.
func (p OptionFlag) String() string { return fmt.Sprint(map[string]any(p)) }

// Set implements flag.Value.
func (p OptionFlag) Set(s string) error {
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
