//go:build !amd64

package cpu

const haveQuantAsm = false

func q8DotRows(q []int8, d []float32, x, y []float32, nb int)  { panic("no assembly") }
func q4DotRows(q []uint8, d []float32, x, y []float32, nb int) { panic("no assembly") }
func bf16DotRows(w []uint16, ldw int, x, y []float32, n16 int) { panic("no assembly") }
func q8Dequant(q []int8, d []float32, dst []float32)           { panic("no assembly") }
func q4Dequant(q []uint8, d []float32, dst []float32)          { panic("no assembly") }
