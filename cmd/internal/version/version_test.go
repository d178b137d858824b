package version

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestFormat(t *testing.T) {
	info := &debug.BuildInfo{GoVersion: "go1.25.1", Main: debug.Module{Version: "v0.1.0"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "1a2b3c4d5e6f7a8b9c0d"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "true"},
	}}
	if got, want := format(info), "posformer v0.1.0 (rev 1a2b3c4d5e6f, 2026-01-02T03:04:05Z, modified) go1.25.1"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	info = &debug.BuildInfo{GoVersion: "go1.25.1"}
	if got, want := format(info), "posformer (devel) go1.25.1"; got != want {
		t.Errorf("without a version or revision: got %q, want %q", got, want)
	}
	if s := String(); !strings.HasPrefix(s, "posformer ") {
		t.Errorf("String() = %q", s)
	}
}
