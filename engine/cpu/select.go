package cpu

// select.go: Where (pick from two operands by a bool mask) and Clamp (bound an operand between
// two others); each operand is a scalar or of the output's shape.

// Where: cond, onTrue and onFalse are each either a scalar or of the output's shape.
func lowerWhere(lw *lowering) (stepFn, error) {
	n := lw.n
	sc, st, sf := 1, 1, 1
	if n.inputs[0].shape.IsScalar() {
		sc = 0
	}
	if n.inputs[1].shape.IsScalar() {
		st = 0
	}
	if n.inputs[2].shape.IsScalar() {
		sf = 0
	}
	size := n.shape.DType.Size()
	ic, it, iff, io := lw.in[0], lw.in[1], lw.in[2], lw.out
	p := lw.e.backend.pool
	return func(f *frame) {
		c, t, fa, out := typed[bool](f.slots[ic]), f.slots[it], f.slots[iff], f.slots[io]
		switch size {
		case 1:
			whereRange(p, c, t, fa, out, sc, st, sf)
		case 2:
			whereRange(p, c, typed[uint16](t), typed[uint16](fa), typed[uint16](out), sc, st, sf)
		case 4: // int32 and float32: the attention mask, the cache's positions
			whereRange(p, c, typed[uint32](t), typed[uint32](fa), typed[uint32](out), sc, st, sf)
		case 8:
			whereRange(p, c, typed[uint64](t), typed[uint64](fa), typed[uint64](out), sc, st, sf)
		default:
			p.parallelFor(len(out)/max(size, 1), elementwiseGrain, func(lo, hi int) {
				for i := lo; i < hi; i++ {
					src, j := fa, i*sf
					if c[i*sc] {
						src, j = t, i*st
					}
					copy(out[i*size:(i+1)*size], src[j*size:(j+1)*size])
				}
			})
		}
	}, nil
}

// whereRange is Where on elements of one machine word (a copy call per element cost as much as
// the rest of a prefill's mask), the threads taking ranges of a large output; sc, st and sf are
// 0 for a scalar operand, 1 otherwise.
func whereRange[T any](p *pool, c []bool, t, fa, out []T, sc, st, sf int) {
	run := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if c[i*sc] {
				out[i] = t[i*st]
			} else {
				out[i] = fa[i*sf]
			}
		}
	}
	if sc == 1 && st == 0 && sf == 0 {
		// Two scalars chosen by a full condition (the attention mask's 0 and −1e9): a choice
		// of two values held in registers, which the compiler makes without a branch.
		tv, fv := t[0], fa[0]
		run = func(lo, hi int) {
			for i, ci := range c[lo:hi] {
				v := fv
				if ci {
					v = tv
				}
				out[lo+i] = v
			}
		}
	}
	if len(out) < 4*elementwiseGrain {
		run(0, len(out))
		return
	}
	p.parallelFor(len(out), elementwiseGrain, run)
}

// Clamp: the bounds are scalars or of the operand's shape.
type clampStep struct{ lw *lowering }

func clampStepT[T number](lw *lowering) (stepFn, error) {
	n := lw.n
	slo, shi := 1, 1
	if n.inputs[0].shape.IsScalar() {
		slo = 0
	}
	if n.inputs[2].shape.IsScalar() {
		shi = 0
	}
	ilo, ix, ihi, io := lw.in[0], lw.in[1], lw.in[2], lw.out
	return func(f *frame) {
		lo, x, hi, out := typed[T](f.slots[ilo]), typed[T](f.slots[ix]), typed[T](f.slots[ihi]), typed[T](f.slots[io])
		for i := range out {
			out[i] = min(max(x[i], lo[i*slo]), hi[i*shi])
		}
	}, nil
}

func (s clampStep) f32() (stepFn, error) { return clampStepT[float32](s.lw) }

func (s clampStep) f64() (stepFn, error) { return clampStepT[float64](s.lw) }

func (s clampStep) i8() (stepFn, error) { return clampStepT[int8](s.lw) }

func (s clampStep) i16() (stepFn, error) { return clampStepT[int16](s.lw) }

func (s clampStep) i32() (stepFn, error) { return clampStepT[int32](s.lw) }

func (s clampStep) i64() (stepFn, error) { return clampStepT[int64](s.lw) }

func (s clampStep) u8() (stepFn, error) { return clampStepT[uint8](s.lw) }

func (s clampStep) u16() (stepFn, error) { return clampStepT[uint16](s.lw) }

func (s clampStep) u32() (stepFn, error) { return clampStepT[uint32](s.lw) }

func (s clampStep) u64() (stepFn, error) { return clampStepT[uint64](s.lw) }
