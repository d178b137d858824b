// Package version says which build of posformer runs, from what the Go toolchain records in
// the binary (runtime/debug.ReadBuildInfo): the module's version (a tag or pseudo-version
// when installed with `go install ...@version`, "(devel)" when built in a clone), the VCS
// revision and time when built from a git checkout, and the Go version.
package version

import (
	"fmt"
	"runtime/debug"
)

// String is one line: "posformer v0.1.0 (rev 1a2b3c4d5e6f, 2026-01-02T03:04:05Z, modified) go1.25.1".
func String() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "posformer (no build information: built without module support)"
	}
	return format(info)
}

func format(info *debug.BuildInfo) string {
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, at, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", modified"
			}
		}
	}
	out := "posformer " + v
	if rev != "" {
		out += fmt.Sprintf(" (rev %.12s", rev)
		if at != "" {
			out += ", " + at
		}
		out += modified + ")"
	}
	return out + " " + info.GoVersion
}
