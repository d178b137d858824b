//go:build !amd64

package kernels

import "errors"

// AMX exists only on amd64.

func amxReady(lv int32) bool { return false }

// HasAMX reports whether SgemmBF16 runs on AMX tiles: never off amd64.
func HasAMX() bool { return false }

// SetAMX: see the amd64 version; off amd64 only SetAMX(false) succeeds.
func SetAMX(on bool) error {
	if on {
		return errors.New("AMX: not on this architecture")
	}
	return nil
}

func sgemmAMX(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	panic("unreachable")
}
