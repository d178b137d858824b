//go:build cgo && !noxla

// Package xla adds GoMLX's XLA backend (a PJRT plugin: "xla:cpu", "xla:cuda") to
// engine.NewBackend. Programs import it for its effect:
//
//	import _ "github.com/posformer/posformer/engine/xla"
//
// It lives apart from engine because it needs cgo: every binary that imported engine used to be
// linked by the system's linker for a backend that no library or test uses, which made a cold
// test run half a minute longer. Built without cgo (or with the tag noxla) it adds nothing, and
// "xla:cpu" answers that the binary has no XLA.
package xla

import (
	"fmt"
	"slices"

	"github.com/gomlx/gomlx/backends"
	gomlxla "github.com/gomlx/gomlx/backends/xla"
	"github.com/posformer/posformer/engine"
)

func init() {
	// GoMLX would otherwise download a plugin on first use; posformer never downloads at run time.
	gomlxla.EnableAutoInstall(false)
	engine.RegisterXLA(newXLA)
}

func newXLA(plugin string) (b backends.Backend, err error) {
	name := "xla:" + plugin
	if !slices.Contains(gomlxla.GetAvailablePlugins(), plugin) {
		return nil, fmt.Errorf("backend %s: no PJRT %q plugin installed; install one (e.g. `go run github.com/gomlx/go-xla/cmd/pjrt_installer@latest`, or put pjrt_c_api_%s_plugin.so in $PJRT_PLUGIN_LIBRARY_PATH) or use --backend cpu", name, plugin, plugin)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("backend %s: %v", name, r)
		}
	}()
	b, err = gomlxla.New(plugin)
	if err != nil {
		return nil, fmt.Errorf("backend %s: %w", name, err)
	}
	return b, nil
}
