package quant

// Row groups: a Q8_0 or Q4_0 matrix with its rows interleaved by sixteen, for products with one
// row of x at a time (decoding). Split's layout keeps each weight row whole, so a kernel reads
// sixteen rows as sixteen streams and spends, for every block of every row, a conversion, two
// broadcasts of scales, a multiply and a horizontal sum in the end. Grouped, the sixteen rows of
// a block lie side by side: 4 bytes of each row, then the next 4 of each, so that one 64-byte
// vector holds 4 values of all sixteen rows, each 32-bit lane one row's integer dot product of
// 4 values with 4 values of x, and a block's scaling is one vector op for the sixteen rows. The
// matrix is read as one stream, and with its scales as half floats it is exactly the bytes of a
// GGUF file.
//
// For rows n = 16g + r (r < 16) and block b, the grouped values are
//
//	gq[g][b][s][r][k] = q[n][b·vb + 4s + k]     (s < vb/4 steps, k < 4)
//	gd[g][b][r]       = d[n][b] as a half float
//
// with vb the bytes of a block's values (32 for Q8_0, 16 for Q4_0): Q4_0's byte 4s+k holds
// values 4s+k and 16+4s+k, Q8_0's is value 4s+k.

import (
	"encoding/binary"
	"fmt"
)

// GroupRows is the number of rows a group interleaves: the 32-bit lanes of a 64-byte vector.
const GroupRows = 16

// Group interleaves a matrix of n rows (a multiple of GroupRows) and nb blocks a row, in Split's
// layout (q, d), into row groups (gq, the length of q; gd, half floats, the length of d). It
// fails for a scale that a half float does not hold exactly: a matrix from a GGUF file or from
// Quantize never has one (a llama2.c file's float32 scales may).
func Group(t Type, q []byte, d []float32, n, nb int, gq []byte, gd []uint16) error {
	vb, err := groupCheck(t, n, nb, len(q), len(d), len(gq), len(gd))
	if err != nil {
		return err
	}
	for i, v := range d {
		h := F32ToF16(v)
		if F16ToF32(h) != v {
			return fmt.Errorf("grouping rows: scale %d (%g) is not a half float", i, v)
		}
		n, b := i/nb, i%nb
		gd[(n/GroupRows*nb+b)*GroupRows+n%GroupRows] = h
	}
	steps := vb / 4
	for n := range n {
		g, r := n/GroupRows, n%GroupRows
		for b := range nb {
			blk := (g*nb + b) * GroupRows * vb
			for s := range steps {
				binary.LittleEndian.PutUint32(gq[blk+(s*GroupRows+r)*4:], binary.LittleEndian.Uint32(q[(n*nb+b)*vb+4*s:]))
			}
		}
	}
	return nil
}

// Ungroup is Group's inverse: the rows of gq and gd back in Split's layout.
func Ungroup(t Type, gq []byte, gd []uint16, n, nb int, q []byte, d []float32) error {
	if _, err := groupCheck(t, n, nb, len(q), len(d), len(gq), len(gd)); err != nil {
		return err
	}
	UngroupRows(t, gq, gd, nb, 0, n, q, d)
	return nil
}

// UngroupRows writes rows [r0, r1) of a grouped matrix of nb blocks a row in Split's layout into
// q and d (rows r1−r0 of each): for the kernels that read whole rows. The lengths are the
// caller's to get right.
func UngroupRows(t Type, gq []byte, gd []uint16, nb, r0, r1 int, q []byte, d []float32) {
	vb := t.BlockBytes() - 2
	steps := vb / 4
	for n := r0; n < r1; n++ {
		g, r := n/GroupRows, n%GroupRows
		for b := range nb {
			d[(n-r0)*nb+b] = F16ToF32(gd[(g*nb+b)*GroupRows+r])
			blk := (g*nb + b) * GroupRows * vb
			for s := range steps {
				binary.LittleEndian.PutUint32(q[((n-r0)*nb+b)*vb+4*s:], binary.LittleEndian.Uint32(gq[blk+(s*GroupRows+r)*4:]))
			}
		}
	}
}

// groupCheck returns the bytes of a block's values, or why the lengths do not make a matrix of
// n rows of nb blocks in either layout.
func groupCheck(t Type, n, nb, q, d, gq, gd int) (int, error) {
	if t != Q8_0 && t != Q4_0 {
		return 0, fmt.Errorf("grouping rows: %v is not Q8_0 or Q4_0", t)
	}
	if n%GroupRows != 0 {
		return 0, fmt.Errorf("grouping rows: %d rows is not a multiple of %d", n, GroupRows)
	}
	vb := t.BlockBytes() - 2
	if q != n*nb*vb || gq != q || d != n*nb || gd != d {
		return 0, fmt.Errorf("grouping rows: %d rows of %d %v blocks want %d values and %d scales, got %d and %d split, %d and %d grouped", n, nb, t, n*nb*vb, n*nb, q, d, gq, gd)
	}
	return vb, nil
}
