package positional

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Constructor builds a scheme from its options (the keys of the config's "positional" block
// other than "name") and the architecture it is plugged into.
type Constructor func(opts *Options, arch Arch) (Scheme, error)

var registry = map[string]Constructor{}

// Register makes a scheme constructible by name. Scheme files call it from init.
func Register(name string, c Constructor) {
	if _, dup := registry[name]; dup {
		panic("positional: scheme registered twice: " + name)
	}
	registry[name] = c
}

// Names lists the registered schemes, sorted.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// New builds the scheme called name. Unknown names and unknown or mistyped options are errors.
func New(name string, raw map[string]any, arch Arch) (Scheme, error) {
	c, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("unknown positional scheme %q (valid: %s)", name, strings.Join(Names(), ", "))
	}
	if _, ok := raw[SSMaxOption]; ok {
		// An option of every scheme, read by NewSSMax: the scheme itself does not see it.
		rest := make(map[string]any, len(raw))
		for k, v := range raw {
			if k != SSMaxOption {
				rest[k] = v
			}
		}
		raw = rest
	}
	opts := NewOptions(raw)
	s, err := c(opts, arch)
	// A mistyped option is often why the constructor failed (it saw the default), so the
	// option error comes first and the constructor's follows on the same line.
	if optErr := opts.Err(); optErr != nil {
		if err != nil {
			err = fmt.Errorf("%w; %v", optErr, err)
		} else {
			err = optErr
		}
	}
	if err != nil {
		return nil, fmt.Errorf("positional scheme %q: %w", name, err)
	}
	return s, nil
}

// Rest hands over the options not read yet, marking them read: a scheme built on another (DAPE
// on its bias) passes them on, and the inner scheme reports those it does not know.
func (o *Options) Rest() map[string]any {
	rest := map[string]any{}
	for k, v := range o.raw {
		if k != "name" && !o.read[k] {
			rest[k] = v
			o.read[k] = true
		}
	}
	return rest
}

// Options reads a scheme's options with defaults, recording which keys were read so that a
// misspelt key is reported instead of silently ignored.
type Options struct {
	raw  map[string]any
	read map[string]bool
	errs []string
	subs map[string]*Options // nested blocks such as RoPE's rope_scaling
}

// NewOptions wraps raw option values (as decoded from JSON).
func NewOptions(raw map[string]any) *Options {
	if raw == nil {
		raw = map[string]any{}
	}
	return &Options{raw: raw, read: map[string]bool{}}
}

// Float returns the option key as a float64, or def when absent.
func (o *Options) Float(key string, def float64) float64 {
	o.read[key] = true
	v, ok := o.raw[key]
	if !ok {
		return def
	}
	f, ok := number(v)
	switch {
	case !ok:
		o.errs = append(o.errs, fmt.Sprintf("option %q must be a number, got %v", key, v))
	case math.IsNaN(f) || math.IsInf(f, 0):
		o.errs = append(o.errs, fmt.Sprintf("option %q must be finite, got %v", key, v))
	default:
		return f
	}
	return def
}

// number converts the numeric types that JSON decoding and Go callers produce.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

// Floats returns the option key as a list of numbers, or def when absent. Besides a JSON
// array it accepts a single number (a list of one) and a comma-separated string such as
// "0.5,0.25", which is what a key=value command-line flag can carry.
func (o *Options) Floats(key string, def []float64) []float64 {
	o.read[key] = true
	v, ok := o.raw[key]
	if !ok {
		return def
	}
	out, ok := numbers(v)
	if !ok {
		o.errs = append(o.errs, fmt.Sprintf("option %q must be a list of numbers, got %v", key, v))
		return def
	}
	return out
}

// numbers converts a list option: a number, a JSON array of numbers, or "a,b,c".
func numbers(v any) ([]float64, bool) {
	if f, ok := number(v); ok {
		return []float64{f}, true
	}
	var items []any
	switch x := v.(type) {
	case []float64:
		return append([]float64{}, x...), true
	case []any:
		items = x
	case string:
		for _, part := range strings.Split(x, ",") {
			f, err := strconv.ParseFloat(strings.TrimSpace(part), 64)
			if err != nil {
				return nil, false
			}
			items = append(items, f)
		}
	default:
		return nil, false
	}
	out := make([]float64, len(items))
	for i, e := range items {
		f, ok := number(e)
		if !ok {
			return nil, false
		}
		out[i] = f
	}
	return out, true
}

// Int returns the option key as an int, or def when absent.
func (o *Options) Int(key string, def int) int {
	f := o.Float(key, float64(def))
	if f != math.Trunc(f) {
		o.errs = append(o.errs, fmt.Sprintf("option %q must be an integer, got %v", key, f))
		return def
	}
	return int(f)
}

// String returns the option key as a string, or def when absent; allowed, when given, lists
// the accepted values.
func (o *Options) String(key, def string, allowed ...string) string {
	o.read[key] = true
	v, ok := o.raw[key]
	if !ok {
		return def
	}
	s, isString := v.(string)
	if !isString {
		o.errs = append(o.errs, fmt.Sprintf("option %q must be a string, got %v", key, v))
		return def
	}
	if len(allowed) > 0 {
		for _, a := range allowed {
			if s == a {
				return s
			}
		}
		o.errs = append(o.errs, fmt.Sprintf("option %q is %q (valid: %s)", key, s, strings.Join(allowed, ", ")))
		return def
	}
	return s
}

// Bool returns the option key as a bool, or def when absent.
func (o *Options) Bool(key string, def bool) bool {
	o.read[key] = true
	v, ok := o.raw[key]
	if !ok {
		return def
	}
	b, isBool := v.(bool)
	if !isBool {
		o.errs = append(o.errs, fmt.Sprintf("option %q must be true or false, got %v", key, v))
		return def
	}
	return b
}

// Sub returns the nested block key (a JSON object, such as Hugging Face's rope_scaling) as
// options of its own, or nil when the key is absent or null. Its errors are reported by the
// parent's Err, prefixed with key.
func (o *Options) Sub(key string) *Options {
	o.read[key] = true
	v, ok := o.raw[key]
	if !ok || v == nil {
		return nil
	}
	m, isMap := v.(map[string]any)
	if !isMap {
		o.errs = append(o.errs, fmt.Sprintf("option %q must be an object, got %v", key, v))
		return nil
	}
	sub := NewOptions(m)
	if o.subs == nil {
		o.subs = map[string]*Options{}
	}
	o.subs[key] = sub
	return sub
}

// Errorf records a validation error found by a constructor.
func (o *Options) Errorf(format string, args ...any) {
	o.errs = append(o.errs, fmt.Sprintf(format, args...))
}

// Err reports mistyped options and keys that the scheme never read.
func (o *Options) Err() error {
	var unknown []string
	for k := range o.raw {
		if k != "name" && !o.read[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	if len(unknown) > 0 {
		var known []string
		for k := range o.read {
			known = append(known, k)
		}
		sort.Strings(known)
		valid := strings.Join(known, ", ")
		if valid == "" {
			valid = "none"
		}
		o.errs = append(o.errs, fmt.Sprintf("unknown option %s (valid: %s)", strings.Join(unknown, ", "), valid))
	}
	for _, key := range sortedKeys(o.subs) {
		if err := o.subs[key].Err(); err != nil {
			o.errs = append(o.errs, fmt.Sprintf("%s: %v", key, err))
		}
	}
	if len(o.errs) > 0 {
		return fmt.Errorf("%s", strings.Join(o.errs, "; "))
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
