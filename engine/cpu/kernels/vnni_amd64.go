package kernels

// Go declarations of vnni_amd64.s, and the checked wrappers that call them.

import (
	"fmt"

	"github.com/posformer/posformer/layers/quant"
)

const haveVNNIAsm = true

// The kernels take a row of x in the layout of layoutAct: xq (64 bytes per pair of blocks),
// xc (16 int32 corrections per pair) and xd (16 float32 scales per pair).

//go:noescape
func q8ActDotRowsVNNI(q *int8, d *float32, xq *int8, xc *int32, xd *float32, y *float32, rows int, nb int)

//go:noescape
func q4ActDotRowsVNNI(q *uint8, d *float32, xq *int8, xc *int32, xd *float32, y *float32, rows int, nb int)

//go:noescape
func q8ActQuantizeVNNI(x *float32, vq *int8, vc *int32, vd *float32, nb int)

//go:noescape
func q4ActQuantizeVNNI(x *float32, vq *int8, vc *int32, vd *float32, nb int)

// actQuantize quantizes x into a's laid-out form, for products with typ weights.
func actQuantize(typ quant.Type, x []float32, a *ActRow) {
	nb := len(x) / 32
	checkAct("actQuantize", a, nb)
	if nb == 0 {
		return
	}
	if typ == quant.Q8_0 {
		q8ActQuantizeVNNI(&x[0], &a.vq[0], &a.vc[0], &a.vd[0], nb)
	} else {
		q4ActQuantizeVNNI(&x[0], &a.vq[0], &a.vc[0], &a.vd[0], nb)
	}
}

// checkAct panics unless a holds the laid-out row of nb blocks the kernels read.
func checkAct(name string, a *ActRow, nb int) {
	np := actPairs(32 * nb)
	if len(a.vq) < 64*np || len(a.vc) < 16*np || len(a.vd) < 16*np {
		panic(fmt.Sprintf("%s: x of %d blocks wants %d pairs laid out, got %d bytes, %d corrections, %d scales", name, nb, np, len(a.vq), len(a.vc), len(a.vd)))
	}
}

func q8ActDotRows(q []int8, d []float32, a *ActRow, y []float32, nb int) {
	if len(q) < len(y)*32*nb || len(d) < len(y)*nb {
		panic(fmt.Sprintf("q8ActDotRows: %d rows of %d blocks, got %d values and %d scales", len(y), nb, len(q), len(d)))
	}
	checkAct("q8ActDotRows", a, nb)
	if nb == 0 {
		clear(y)
		return
	}
	q8ActDotRowsVNNI(&q[0], &d[0], &a.vq[0], &a.vc[0], &a.vd[0], &y[0], len(y), nb)
}

func q4ActDotRows(q []uint8, d []float32, a *ActRow, y []float32, nb int) {
	if len(q) < len(y)*16*nb || len(d) < len(y)*nb {
		panic(fmt.Sprintf("q4ActDotRows: %d rows of %d blocks, got %d bytes and %d scales", len(y), nb, len(q), len(d)))
	}
	checkAct("q4ActDotRows", a, nb)
	if nb == 0 {
		clear(y)
		return
	}
	q4ActDotRowsVNNI(&q[0], &d[0], &a.vq[0], &a.vc[0], &a.vd[0], &y[0], len(y), nb)
}
