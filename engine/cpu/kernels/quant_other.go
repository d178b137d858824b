//go:build !amd64

package kernels

const haveQuantAsm = false

func q8DotRows(a quantAsm, q []int8, d []float32, x, y []float32, nb int)  { panic("no assembly") }
func q4DotRows(a quantAsm, q []uint8, d []float32, x, y []float32, nb int) { panic("no assembly") }
func bf16DotRows(a quantAsm, w []uint16, ldw int, x, y []float32, n16 int) { panic("no assembly") }
func q8Dequant(a quantAsm, q []int8, d []float32, dst []float32)           { panic("no assembly") }
func q4Dequant(a quantAsm, q []uint8, d []float32, dst []float32)          { panic("no assembly") }
