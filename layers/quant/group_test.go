package quant

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// A grouped matrix puts value (n, b, 4s+k) at [n/16][b][s][n%16][k] and scale (n, b) at
// [n/16][b][n%16]; Ungroup and UngroupRows give back Split's layout exactly.
func TestGroupRows(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, typ := range []Type{Q8_0, Q4_0} {
		const n, nb = 48, 3
		vb := typ.BlockBytes() - 2
		w := make([]float32, n*nb*32)
		for i := range w {
			w[i] = float32(r.NormFloat64())
		}
		q, d := make([]byte, n*nb*vb), make([]float32, n*nb)
		if err := QuantizeSplit(typ, w, q, d); err != nil {
			t.Fatal(err)
		}
		gq, gd := make([]byte, len(q)), make([]uint16, len(d))
		if err := Group(typ, q, d, n, nb, gq, gd); err != nil {
			t.Fatal(err)
		}
		for row := range n {
			for b := range nb {
				if got := F16ToF32(gd[(row/16*nb+b)*16+row%16]); got != d[row*nb+b] {
					t.Fatalf("%v: scale of row %d block %d is %g, want %g", typ, row, b, got, d[row*nb+b])
				}
				for j := range vb {
					s, k := j/4, j%4
					at := (((row/16*nb+b)*(vb/4)+s)*16+row%16)*4 + k
					if gq[at] != q[(row*nb+b)*vb+j] {
						t.Fatalf("%v: byte %d of row %d block %d is at %d? got %d, want %d", typ, j, row, b, at, gq[at], q[(row*nb+b)*vb+j])
					}
				}
			}
		}
		q2, d2 := make([]byte, len(q)), make([]float32, len(d))
		if err := Ungroup(typ, gq, gd, n, nb, q2, d2); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(q, q2) || !slices.Equal(d, d2) {
			t.Fatalf("%v: ungrouped matrix differs from the original", typ)
		}
		// Rows 17-21 alone.
		q3, d3 := make([]byte, 5*nb*vb), make([]float32, 5*nb)
		UngroupRows(typ, gq, gd, nb, 17, 22, q3, d3)
		if !slices.Equal(q3, q[17*nb*vb:22*nb*vb]) || !slices.Equal(d3, d[17*nb:22*nb]) {
			t.Fatalf("%v: rows 17-21 ungrouped differ from the original", typ)
		}
	}
}

// Group refuses what it cannot interleave: rows not a multiple of 16, lengths that do not fit,
// a scale that is not a half float, a format without blocks.
func TestGroupRowsErrors(t *testing.T) {
	q, d := make([]byte, 16*16), make([]float32, 16)
	gq, gd := make([]byte, len(q)), make([]uint16, len(d))
	if err := Group(Q4_0, q, d, 16, 1, gq, gd); err != nil {
		t.Fatal(err)
	}
	if err := Group(Q4_0, q[:15*16], d[:15], 15, 1, gq[:15*16], gd[:15]); err == nil {
		t.Error("15 rows grouped without error")
	}
	if err := Group(Q8_0, q, d, 16, 1, gq, gd); err == nil {
		t.Error("Q4_0 lengths grouped as Q8_0 without error")
	}
	if err := Group(F16, q, d, 16, 1, gq, gd); err == nil {
		t.Error("f16 grouped without error")
	}
}
