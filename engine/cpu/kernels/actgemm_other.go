//go:build !amd64

package kernels

import "github.com/posformer/posformer/layers/quant"

const haveActGemmAsm = false

func actGemm4x8(pq []int8, pd []float32, xq []int8, xd []float32, y []float32, ldy, nb int) {
	panic("no assembly")
}

func q8uActGemm4x8(pq []int8, pd []float32, xq []int8, xd []float32, xs []int32, y []float32, ldy, nb int) {
	panic("no assembly")
}

func vnniTiles() bool { return false }

func q4ActGemm4x8(pq []int8, pd []float32, xq []int8, xd []float32, xs []int32, y []float32, ldy, nb int) {
	panic("no assembly")
}

func actGemm1(typ quant.Type, q []byte, d []float32, a *ActRow, y []float32, nb int) {
	panic("no assembly")
}

func quantizeRowAsm(x []float32, q []int8, d []float32, s []int32) { panic("no assembly") }

func pairQ4Asm(q, q4 []int8, o []int16) { panic("no assembly") }

func packValuesAsm(typ quant.Type, q []byte, ldq int, pq []int8, nb int, biased bool) {
	panic("no assembly")
}
