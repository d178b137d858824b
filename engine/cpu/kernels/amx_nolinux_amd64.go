//go:build !linux

package kernels

import "errors"

// requestTiles: the AMX path asks for the tile registers the way Linux grants them; elsewhere
// it is not used and SgemmBF16 stays on AVX-512.
func requestTiles() error {
	return errors.New("AMX tiles are requested only on Linux")
}
