package cpu

// iota.go: Iota, the op numbering the positions along one axis.

// Iota: values count along axis.
func lowerIota(lw *lowering) (stepFn, error) {
	data, err := iotaBytes(lw.n)
	if err != nil {
		return nil, err
	}
	io := lw.out
	return func(f *frame) { copy(f.slots[io], data) }, nil
}

// iotaBytes is the value of an Iota node: it depends on nothing, so Compile turns it into a
// constant (attention numbers its cache slots with one at every decoding step).
func iotaBytes(n *node) ([]byte, error) {
	s := n.shape
	axis := n.attr.(int)
	inner := 1
	for _, d := range s.Dimensions[axis+1:] {
		inner *= d
	}
	dim := s.Dimensions[axis]
	store, err := storer(s.DType)
	if err != nil {
		return nil, err
	}
	data := make([]byte, byteSize(s))
	for i := range s.Size() {
		store(data, i, float64((i/inner)%dim))
	}
	return data, nil
}
