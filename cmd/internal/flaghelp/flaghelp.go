// Package flaghelp prints a flag set's flags for -h with each flag's aliases on one line, as
// llama.cpp's tools do ("-n, --n-predict N"). The commands register an alias as a second
// flag bound to the same variable (fs.IntVar(&o.n, "n", ...) and fs.IntVar(&o.n,
// "n-predict", ...)); the flag package then prints each of them as a flag of its own, with the
// same text twice. Two flags are aliases when their values are the same variable: the flag
// package's values are pointers to it, so they compare equal.
package flaghelp

import (
	"flag"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
)

// PrintDefaults writes fs's flags to fs.Output(), as the flag set's own PrintDefaults does,
// one entry per variable: its names (the shortest first, dashed as llama.cpp writes them),
// the value's kind, and the help text with the default.
func PrintDefaults(fs *flag.FlagSet) { Fprint(fs.Output(), fs) }

// Fprint is PrintDefaults writing to w.
func Fprint(w io.Writer, fs *flag.FlagSet) {
	for _, g := range Groups(fs) {
		f := g[0]
		kind, usage := flag.UnquoteUsage(f)
		names := make([]string, len(g))
		for i, a := range g {
			names[i] = dashed(a.Name, len(g) > 1)
		}
		line := "  " + strings.Join(names, ", ")
		if kind != "" {
			line += " " + kind
		}
		usage = strings.ReplaceAll(usage, "\n", "\n    \t")
		if !isZero(f.DefValue) {
			if kind == "string" {
				usage += fmt.Sprintf(" (default %q)", f.DefValue)
			} else {
				usage += fmt.Sprintf(" (default %v)", f.DefValue)
			}
		}
		fmt.Fprintf(w, "%s\n    \t%s\n", line, usage)
	}
}

// Groups returns fs's flags grouped by the variable they set, each group sorted shortest name
// first, the groups in the order of their first name.
func Groups(fs *flag.FlagSet) [][]*flag.Flag {
	var groups [][]*flag.Flag
	index := map[any]int{}
	fs.VisitAll(func(f *flag.Flag) {
		// A value of a type that cannot be compared (flag.Func's) is a flag of its own.
		if t := reflect.TypeOf(f.Value); t != nil && t.Comparable() && reflect.ValueOf(f.Value).Kind() == reflect.Pointer {
			if i, ok := index[f.Value]; ok {
				groups[i] = append(groups[i], f)
				return
			}
			index[f.Value] = len(groups)
		}
		groups = append(groups, []*flag.Flag{f})
	})
	for _, g := range groups {
		sort.SliceStable(g, func(i, j int) bool { return len(g[i].Name) < len(g[j].Name) })
	}
	sort.SliceStable(groups, func(i, j int) bool { return groups[i][0].Name < groups[j][0].Name })
	return groups
}

// dashed writes a flag's name as llama.cpp does: one dash for a letter, and for a short form
// (three letters at most) beside a longer alias (-np, --parallel); two for the others. Both
// forms parse either way.
func dashed(name string, aliased bool) string {
	if len(name) == 1 || (aliased && len(name) <= 3) {
		return "-" + name
	}
	return "--" + name
}

// isZero reports whether a default is not worth printing, as the flag package decides.
func isZero(def string) bool {
	switch def {
	case "", "0", "false", "0s", "[]", "map[]", "<nil>":
		return true
	}
	return false
}
