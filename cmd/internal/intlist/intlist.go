// Package intlist reads the comma-separated integer lists some flags take ("5,17,300" for
// cmd/infer's --prompt-ids). Each command words its own error (what the numbers are, their
// range, an example), so Parse hands back the field that failed rather than a message.
//
//	ids, bad, ok := intlist.Parse(s, func(id int) bool { return id >= 0 && id < vocab })
//	if !ok {
//		return fmt.Errorf("--prompt-ids: %q is not a token id in [0, %d)", bad, vocab)
//	}
package intlist

import (
	"strconv"
	"strings"
)

// Parse reads s as integers separated by commas, spaces around each allowed. valid (nil: any
// integer) vets each one. The first field that is not an integer, or that valid rejects, ends
// the reading: it comes back as written in bad, with ok false. An empty s is one empty field,
// which is not an integer.
func Parse(s string, valid func(int) bool) (vals []int, bad string, ok bool) {
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || (valid != nil && !valid(v)) {
			return nil, f, false
		}
		vals = append(vals, v)
	}
	return vals, "", true
}
