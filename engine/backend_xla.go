//go:build cgo && !noxla

package engine

import (
	"fmt"
	"slices"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/xla"
)

func init() {
	// GoMLX would otherwise download a plugin on first use; posformer never downloads at run time.
	xla.EnableAutoInstall(false)
	xlaBackend = newXLA
}

func newXLA(plugin string) (b backends.Backend, err error) {
	name := "xla:" + plugin
	if !slices.Contains(xla.GetAvailablePlugins(), plugin) {
		return nil, fmt.Errorf("backend %s: no PJRT %q plugin installed; install one (e.g. `go run github.com/gomlx/go-xla/cmd/pjrt_installer@latest`, or put pjrt_c_api_%s_plugin.so in $PJRT_PLUGIN_LIBRARY_PATH) or use --backend cpu", name, plugin, plugin)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("backend %s: %v", name, r)
		}
	}()
	b, err = xla.New(plugin)
	if err != nil {
		return nil, fmt.Errorf("backend %s: %w", name, err)
	}
	return b, nil
}
