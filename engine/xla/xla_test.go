//go:build cgo && !noxla

package xla

import (
	"strings"
	"testing"

	"github.com/posformer/posformer/engine"
)

// No plugin can be installed here: the backend must say which one is missing and how to get it,
// on one line, rather than download one or fall back to another backend.
func TestNoPlugin(t *testing.T) {
	for _, name := range []string{"xla:cpu", "xla"} {
		_, err := engine.NewBackend(name)
		if err == nil {
			t.Skipf("%s: a PJRT plugin is installed on this machine", name)
		}
		if msg := err.Error(); !strings.Contains(msg, `no PJRT "cpu" plugin installed`) || !strings.Contains(msg, "--backend cpu") || strings.Contains(msg, "\n") {
			t.Errorf("%s without a plugin: got %q, want one line naming the plugin and the fix", name, msg)
		}
	}
}
