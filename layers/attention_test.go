package layers

import (
	"testing"

	"github.com/gomlx/gomlx/backends/simplego"
	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// CacheWrite places each real token's key at [row, head, slot, :] and its value at
// [row, head, :, slot], leaves every other slot as it was (padding writes nothing), and
// updates the slots' positions and validity. Checked against loops over plain slices; this
// also pins the backend's general scatter (non-leading indexed axes), which GoMLX documents
// as internal.
func TestCacheWrite(t *testing.T) {
	const b, kvh, c, hd, s = 2, 2, 6, 3, 2
	backend, err := simplego.New("ops_sequential") // its parallel op scheduling races (GoMLX v0.26)
	if err != nil {
		t.Fatal(err)
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
					oldK[((r*kvh+h)*hd+d)*c+slot] = float32(1000 + r*100 + h*10 + slot + d)
					oldV[((r*kvh+h)*hd+d)*c+slot] = float32(-1000 - r*100 - h*10 - slot - d)
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
		return []*Node{w.Keys(in[5], in[7]), w.Values(in[6], in[8]), w.Pos, w.Valid}
	})
	if err != nil {
		t.Fatal(err)
	}
	outs, err := exe.Exec(slots, valid, pos,
		tensors.FromFlatDataAndDimensions(oldPos, b, c), tensors.FromFlatDataAndDimensions(oldValid, b, c),
		tensors.FromFlatDataAndDimensions(oldK, b, kvh, hd, c), tensors.FromFlatDataAndDimensions(oldV, b, kvh, hd, c),
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
					wantK[((r*kvh+h)*hd+d)*c+slot] = newK[((r*kvh+h)*s+j)*hd+d]
					wantV[((r*kvh+h)*hd+d)*c+slot] = newV[((r*kvh+h)*s+j)*hd+d]
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
