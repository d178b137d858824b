package cpu

// rng.go: the RNGBitGenerator op, drawing from Go's PCG so that a seed gives the same bits on every
// machine.

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
)

// lowerRNG: Go's PCG seeded with the state's first two words; the new state is the generator's
// state after drawing the bits (the third word is kept).
func lowerRNG(lw *lowering) (stepFn, error) {
	is, io, iv := lw.in[0], lw.out, lw.extra[0]
	return func(f *frame) {
		state := typed[uint64](f.slots[is])
		rng := rand.NewPCG(state[0], state[1])
		out := f.slots[iv]
		var w [8]byte
		for i := 0; i < len(out); i += 8 {
			binary.LittleEndian.PutUint64(w[:], rng.Uint64())
			copy(out[i:], w[:])
		}
		third := state[2]
		st, err := rng.MarshalBinary()
		if err != nil || len(st) != 20 {
			panic(fmt.Sprintf("PCG state has an unexpected encoding (%d bytes, %v)", len(st), err))
		}
		next := typed[uint64](f.slots[io])
		next[0] = binary.LittleEndian.Uint64(st[4:12])
		next[1] = binary.LittleEndian.Uint64(st[12:20])
		next[2] = third
	}, nil
}
