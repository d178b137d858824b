//go:build !amd64

package kernels

func widenF16(dst []float32, src []uint16) int  { return 0 }
func widenBF16(dst []float32, src []uint16) int { return 0 }
