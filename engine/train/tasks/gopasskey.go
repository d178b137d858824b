package tasks

import (
	"fmt"
	"math/rand/v2"
)

// GoPasskeyExample is the passkey retrieval of Chen et al. 2023 (position interpolation, §3.3)
// put to a model that has only read Go source: no instruction, a line the model can find again.
// A run of Go text (hay: Haystack of the test text, so no other digits) holds the line
//
//	var passkey = ddddd
//
// after a fraction depth of it, and the sequence ends by repeating the line's start
// ("\nvar passkey = "); the five digits after it are scored. A language model answers it by
// copying what followed the same words earlier, which its training on source code rewards. The
// sequence has length+1 bytes (input length); length must be at least MinGoPasskeyLength.
func GoPasskeyExample(r *rand.Rand, hay []byte, length int, depth float64) Example {
	if length < MinGoPasskeyLength {
		panic(fmt.Sprintf("tasks: Go passkey length %d is below %d", length, MinGoPasskeyLength))
	}
	key := make([]byte, KeyDigits)
	for i := range key {
		key[i] = digits[r.IntN(10)]
	}
	line := append([]byte(goPasskeyLine), key...)
	line = append(line, '\n')
	filler := length + 1 - len(line) - len(goPasskeyLine) - KeyDigits
	fill := make([]byte, filler)
	if len(hay) > filler {
		copy(fill, hay[r.IntN(len(hay)-filler):])
	} else {
		for i := range fill {
			fill[i] = alphabet[r.IntN(len(alphabet))]
		}
	}
	at := int(depth*float64(filler) + 0.5)
	seq := make([]int32, 0, length+1)
	for _, b := range fill[:at] {
		seq = append(seq, int32(b))
	}
	for _, b := range line {
		seq = append(seq, int32(b))
	}
	for _, b := range fill[at:] {
		seq = append(seq, int32(b))
	}
	for _, b := range []byte(goPasskeyLine) {
		seq = append(seq, int32(b))
	}
	for _, b := range key {
		seq = append(seq, int32(b))
	}
	ex := shift(seq)
	for j := len(ex.Weight) - KeyDigits; j < len(ex.Weight); j++ {
		ex.Weight[j] = 1
	}
	return ex
}

// goPasskeyLine starts the line that holds the key and the question that repeats it.
const goPasskeyLine = "\nvar passkey = "

// MinGoPasskeyLength is the shortest Go passkey: the line, the question and one byte of hay.
var MinGoPasskeyLength = 2*len(goPasskeyLine) + 2*KeyDigits + 1
