//go:build !amd64

package kernels

import "github.com/posformer/posformer/layers/quant"

const haveVNNIAsm = false

func q8ActDotRows(q []int8, d []float32, a *ActRow, y []float32, nb int)  { panic("no assembly") }
func q4ActDotRows(q []uint8, d []float32, a *ActRow, y []float32, nb int) { panic("no assembly") }
func actQuantize(typ quant.Type, x []float32, a *ActRow)                  { panic("no assembly") }
