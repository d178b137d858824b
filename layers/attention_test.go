package layers

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gomlx/gomlx/backends/simplego"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// CacheWrite places each real token's key and value at its (row, head, slot) in either layout
// (slot axis 2: [b, kvh, c, hd]; 3: [b, kvh, hd, c]), leaves every other slot as it was
// (padding writes nothing), and updates the slots' positions and validity. Checked against
// loops over plain slices; this also pins the backend's general scatter (non-leading indexed
// axes), which GoMLX documents as internal.
func TestCacheWrite(t *testing.T) {
	for _, axis := range []int{2, 3} {
		t.Run(fmt.Sprintf("slot axis %d", axis), func(t *testing.T) { testCacheWrite(t, axis) })
	}
}

func testCacheWrite(t *testing.T, axis int) {
	const b, kvh, c, hd, s = 2, 2, 6, 3, 2
	backend, err := simplego.New("ops_sequential") // its parallel op scheduling races (GoMLX v0.26)
	if err != nil {
		t.Fatal(err)
	}
	dims := []int{b, kvh, c, hd}
	at := func(r, h, slot, d int) int { return ((r*kvh+h)*c+slot)*hd + d }
	if axis == 3 {
		dims = []int{b, kvh, hd, c}
		at = func(r, h, slot, d int) int { return ((r*kvh+h)*hd+d)*c + slot }
	}
	if got := (BlockConfig{NumKVHeads: kvh, HeadDim: hd}).CacheDims(b, c); axis == 3 && !slices.Equal(got, dims) {
		t.Fatalf("CacheDims for heads of %d: %v, want %v", hd, got, dims)
	}
	// Slot (row, slot) already holds a token when slot < used[row].
	used := []int{1, 3}
	oldK := make([]float32, b*kvh*c*hd)
	oldV := make([]float32, b*kvh*hd*c)
	oldPos := make([]int32, b*c)
	oldValid := make([]bool, b*c)
	for r := range b {
		for slot := range used[r] {
			oldPos[r*c+slot], oldValid[r*c+slot] = int32(10+slot), true
			for h := range kvh {
				for d := range hd {
					oldK[at(r, h, slot, d)] = float32(1000 + r*100 + h*10 + slot + d)
					oldV[at(r, h, slot, d)] = float32(-1000 - r*100 - h*10 - slot - d)
				}
			}
		}
	}
	// Row 0 writes two tokens at slots 1, 2; row 1 one token at slot 3 and a padding token
	// (its slot, 4, stays empty).
	slots := [][]int32{{1, 2}, {3, 4}}
	valid := [][]bool{{true, true}, {true, false}}
	pos := [][]int32{{11, 12}, {13, 99}}
	newK := make([]float32, b*kvh*s*hd)
	newV := make([]float32, b*kvh*s*hd)
	for i := range newK {
		newK[i], newV[i] = float32(i+1), float32(-i-1)
	}

	exe, err := NewExec(backend, func(in []*Node) []*Node {
		w := NewCacheWrite(in[0], in[1], in[2], in[3], in[4])
		return []*Node{w.Keys(in[5], in[7], axis), w.Values(in[6], in[8], axis), w.Pos, w.Valid}
	})
	if err != nil {
		t.Fatal(err)
	}
	outs, err := exe.Exec(slots, valid, pos,
		tensors.FromFlatDataAndDimensions(oldPos, b, c), tensors.FromFlatDataAndDimensions(oldValid, b, c),
		tensors.FromFlatDataAndDimensions(oldK, dims...), tensors.FromFlatDataAndDimensions(oldV, dims...),
		tensors.FromFlatDataAndDimensions(newK, b, kvh, s, hd), tensors.FromFlatDataAndDimensions(newV, b, kvh, s, hd))
	if err != nil {
		t.Fatal(err)
	}
	wantK, wantV := append([]float32(nil), oldK...), append([]float32(nil), oldV...)
	wantPos, wantValid := append([]int32(nil), oldPos...), append([]bool(nil), oldValid...)
	for r := range b {
		for j := range s {
			if !valid[r][j] {
				continue
			}
			slot := int(slots[r][j])
			wantPos[r*c+slot], wantValid[r*c+slot] = pos[r][j], true
			for h := range kvh {
				for d := range hd {
					wantK[at(r, h, slot, d)] = newK[((r*kvh+h)*s+j)*hd+d]
					wantV[at(r, h, slot, d)] = newV[((r*kvh+h)*s+j)*hd+d]
				}
			}
		}
	}
	gotK, gotV := tensors.MustCopyFlatData[float32](outs[0]), tensors.MustCopyFlatData[float32](outs[1])
	gotPos, gotValid := tensors.MustCopyFlatData[int32](outs[2]), tensors.MustCopyFlatData[bool](outs[3])
	for i := range wantK {
		if gotK[i] != wantK[i] {
			t.Fatalf("keys: flat index %d is %g, want %g", i, gotK[i], wantK[i])
		}
		if gotV[i] != wantV[i] {
			t.Fatalf("values: flat index %d is %g, want %g", i, gotV[i], wantV[i])
		}
	}
	for i := range wantPos {
		if gotPos[i] != wantPos[i] || gotValid[i] != wantValid[i] {
			t.Fatalf("slot %d: position %d valid %v, want %d %v", i, gotPos[i], gotValid[i], wantPos[i], wantValid[i])
		}
	}
}

// Small heads keep the transposed cache, larger ones a key a row, and CacheDims puts the slots
// on the axis CacheSlotAxis names.
func TestCacheLayout(t *testing.T) {
	for _, c := range []struct{ hd, axis int }{{8, 3}, {16, 3}, {31, 3}, {32, 2}, {48, 2}, {64, 2}, {128, 2}} {
		cfg := BlockConfig{NumKVHeads: 3, HeadDim: c.hd}
		if got := cfg.CacheSlotAxis(); got != c.axis {
			t.Fatalf("heads of %d: slot axis %d, want %d", c.hd, got, c.axis)
		}
		dims := cfg.CacheDims(2, 100)
		if dims[0] != 2 || dims[1] != 3 || dims[c.axis] != 100 || dims[5-c.axis] != c.hd {
			t.Fatalf("heads of %d: cache dims %v, want slots on axis %d", c.hd, dims, c.axis)
		}
	}
}
