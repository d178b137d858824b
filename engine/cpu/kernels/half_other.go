//go:build !amd64

package kernels

func widenF16(dst []float32, src []uint16) int  { return 0 }
func widenBF16(dst []float32, src []uint16) int { return 0 }
func narrowF16(dst []uint16, src []float32) int { return 0 }
