package cpu

// The builder records a graph as nodes; it computes each node's shape as it is added (with
// GoMLX's shapeinference, so the rules are GoMLX's) and does no work until Compile.

import (
	"fmt"
	"slices"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/notimplemented"
	"github.com/gomlx/gomlx/backends/shapeinference"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// node is one value of the graph.
type node struct {
	id     int
	op     backends.OpType
	shape  shapes.Shape
	inputs []*node
	attr   any      // the op's parameters (one of the *Attr types)
	extra  []*node  // further outputs of a multi-output op (RNGBitGenerator)
	owner  *node    // for such an output: the node whose step computes it
	b      *Builder // the builder the node belongs to
}

// Builder implements backends.Builder.
type Builder struct {
	notimplemented.Builder
	backend  *Backend
	name     string
	nodes    []*node
	params   []*node
	compiled bool
}

var _ backends.Builder = (*Builder)(nil)

func newBuilder(b *Backend, name string) *Builder {
	bld := &Builder{backend: b, name: name}
	bld.ErrFn = func(op backends.OpType) error {
		return fmt.Errorf("backend %s: op %s not implemented", BackendName, op)
	}
	return bld
}

// Name implements backends.Builder.
func (b *Builder) Name() string { return b.name }

// OpShape implements backends.Builder.
func (b *Builder) OpShape(op backends.Op) (shapes.Shape, error) {
	n, err := b.node(op)
	if err != nil {
		return shapes.Invalid(), err
	}
	return n.shape, nil
}

func (b *Builder) node(op backends.Op) (*node, error) {
	n, ok := op.(*node)
	if !ok || n == nil {
		return nil, fmt.Errorf("backend %s: op is a %T, not one of this backend's nodes", BackendName, op)
	}
	if n.b != b {
		return nil, fmt.Errorf("backend %s: node from builder %q used in builder %q", BackendName, n.b.name, b.name)
	}
	return n, nil
}

func (b *Builder) nodesOf(ops ...backends.Op) ([]*node, error) {
	if b.compiled {
		return nil, fmt.Errorf("backend %s: builder %q already compiled", BackendName, b.name)
	}
	ns := make([]*node, len(ops))
	for i, op := range ops {
		n, err := b.node(op)
		if err != nil {
			return nil, err
		}
		ns[i] = n
	}
	return ns, nil
}

func (b *Builder) add(op backends.OpType, s shapes.Shape, attr any, inputs ...*node) *node {
	n := &node{id: len(b.nodes), op: op, shape: s, inputs: inputs, attr: attr, b: b}
	b.nodes = append(b.nodes, n)
	return n
}

// checkDType refuses dtypes the backend does not compute with.
func checkDType(op backends.OpType, dt dtypes.DType) error {
	if !supportedDTypes[dt] {
		return fmt.Errorf("backend %s: op %s: dtype %s not implemented", BackendName, op, dt)
	}
	return nil
}

// Parameter implements backends.Builder.
func (b *Builder) Parameter(name string, s shapes.Shape, _ *backends.ShardingSpec) (backends.Op, error) {
	if err := checkDType(backends.OpTypeParameter, s.DType); err != nil && !movableDTypes[s.DType] {
		return nil, fmt.Errorf("parameter %q: %w", name, err)
	}
	n := b.add(backends.OpTypeParameter, s, &paramAttr{name: name, index: len(b.params)})
	b.params = append(b.params, n)
	return n, nil
}

type paramAttr struct {
	name  string
	index int
}

// Constant implements backends.Builder.
func (b *Builder) Constant(flat any, dims ...int) (backends.Op, error) {
	src, elem, err := bytesOf(flat)
	if err != nil {
		return nil, fmt.Errorf("backend %s: constant: %w", BackendName, err)
	}
	dt := dtypes.FromGoType(elem)
	if dt == dtypes.InvalidDType {
		return nil, fmt.Errorf("backend %s: constant of Go type %s not supported", BackendName, elem)
	}
	s := shapes.Make(dt, dims...)
	if byteSize(s) != len(src) {
		return nil, fmt.Errorf("backend %s: constant of %d bytes does not fit shape %s", BackendName, len(src), s)
	}
	data := alloc(len(src))
	copy(data, src)
	return b.add(backends.OpTypeConstant, s, data), nil
}

// Identity implements backends.Builder.
func (b *Builder) Identity(x backends.Op) (backends.Op, error) {
	ns, err := b.nodesOf(x)
	if err != nil {
		return nil, err
	}
	// A new name for the same value: a reshape to the same dimensions, which costs nothing.
	return b.add(backends.OpTypeReshape, ns[0].shape, nil, ns[0]), nil
}

func (b *Builder) unary(op backends.OpType, x backends.Op) (backends.Op, error) {
	ns, err := b.nodesOf(x)
	if err != nil {
		return nil, err
	}
	s, err := shapeinference.UnaryOp(op, ns[0].shape)
	if err != nil {
		return nil, err
	}
	if err := checkDType(op, s.DType); err != nil {
		return nil, err
	}
	return b.add(op, s, nil, ns[0]), nil
}

func (b *Builder) binary(op backends.OpType, lhs, rhs backends.Op) (backends.Op, error) {
	ns, err := b.nodesOf(lhs, rhs)
	if err != nil {
		return nil, err
	}
	var s shapes.Shape
	if shapeinference.ComparisonOperations.Has(op) {
		s, err = shapeinference.ComparisonOp(op, ns[0].shape, ns[1].shape)
	} else {
		s, err = shapeinference.BinaryOp(op, ns[0].shape, ns[1].shape)
	}
	if err != nil {
		return nil, err
	}
	if err := checkDType(op, ns[0].shape.DType); err != nil {
		return nil, err
	}
	return b.add(op, s, nil, ns[0], ns[1]), nil
}

// Unary ops.
func (b *Builder) Abs(x backends.Op) (backends.Op, error)  { return b.unary(backends.OpTypeAbs, x) }
func (b *Builder) Neg(x backends.Op) (backends.Op, error)  { return b.unary(backends.OpTypeNeg, x) }
func (b *Builder) Sign(x backends.Op) (backends.Op, error) { return b.unary(backends.OpTypeSign, x) }
func (b *Builder) Exp(x backends.Op) (backends.Op, error)  { return b.unary(backends.OpTypeExp, x) }
func (b *Builder) Expm1(x backends.Op) (backends.Op, error) {
	return b.unary(backends.OpTypeExpm1, x)
}
func (b *Builder) Log(x backends.Op) (backends.Op, error) { return b.unary(backends.OpTypeLog, x) }
func (b *Builder) Log1p(x backends.Op) (backends.Op, error) {
	return b.unary(backends.OpTypeLog1p, x)
}
func (b *Builder) Sqrt(x backends.Op) (backends.Op, error)  { return b.unary(backends.OpTypeSqrt, x) }
func (b *Builder) Rsqrt(x backends.Op) (backends.Op, error) { return b.unary(backends.OpTypeRsqrt, x) }
func (b *Builder) Tanh(x backends.Op) (backends.Op, error)  { return b.unary(backends.OpTypeTanh, x) }
func (b *Builder) Logistic(x backends.Op) (backends.Op, error) {
	return b.unary(backends.OpTypeLogistic, x)
}
func (b *Builder) Sin(x backends.Op) (backends.Op, error)   { return b.unary(backends.OpTypeSin, x) }
func (b *Builder) Cos(x backends.Op) (backends.Op, error)   { return b.unary(backends.OpTypeCos, x) }
func (b *Builder) Erf(x backends.Op) (backends.Op, error)   { return b.unary(backends.OpTypeErf, x) }
func (b *Builder) Floor(x backends.Op) (backends.Op, error) { return b.unary(backends.OpTypeFloor, x) }
func (b *Builder) Ceil(x backends.Op) (backends.Op, error)  { return b.unary(backends.OpTypeCeil, x) }
func (b *Builder) Round(x backends.Op) (backends.Op, error) { return b.unary(backends.OpTypeRound, x) }
func (b *Builder) IsFinite(x backends.Op) (backends.Op, error) {
	return b.floatPredicate(backends.OpTypeIsFinite, x)
}
func (b *Builder) IsNaN(x backends.Op) (backends.Op, error) {
	return b.floatPredicate(backends.OpTypeIsNaN, x)
}

// floatPredicate is IsFinite or IsNaN: a bool of the operand's shape (GoMLX's shapeinference
// does not count them among the unary ops, whose output dtype is the input's).
func (b *Builder) floatPredicate(op backends.OpType, x backends.Op) (backends.Op, error) {
	ns, err := b.nodesOf(x)
	if err != nil {
		return nil, err
	}
	s := ns[0].shape.Clone()
	if !s.DType.IsFloat() {
		return nil, fmt.Errorf("backend %s: %s takes a float operand, got %s", BackendName, op, s)
	}
	if err := checkDType(op, s.DType); err != nil {
		return nil, err
	}
	s.DType = dtypes.Bool
	return b.add(op, s, nil, ns[0]), nil
}
func (b *Builder) LogicalNot(x backends.Op) (backends.Op, error) {
	return b.unary(backends.OpTypeLogicalNot, x)
}
func (b *Builder) BitwiseNot(x backends.Op) (backends.Op, error) {
	return b.unary(backends.OpTypeBitwiseNot, x)
}

// Binary ops.
func (b *Builder) Add(l, r backends.Op) (backends.Op, error) {
	return b.binary(backends.OpTypeAdd, l, r)
}
func (b *Builder) Sub(l, r backends.Op) (backends.Op, error) {
	return b.binary(backends.OpTypeSub, l, r)
}
func (b *Builder) Mul(l, r backends.Op) (backends.Op, error) {
	return b.binary(backends.OpTypeMul, l, r)
}
func (b *Builder) Div(l, r backends.Op) (backends.Op, error) {
	return b.binary(backends.OpTypeDiv, l, r)
}
func (b *Builder) Max(l, r backends.Op) (backends.Op, error) {
	return b.binary(backends.OpTypeMax, l, r)
}
func (b *Builder) Min(l, r backends.Op) (backends.Op, error) {
	return b.binary(backends.OpTypeMin, l, r)
}
func (b *Builder) Pow(l, r backends.Op) (backends.Op, error) {
	return b.binary(backends.OpTypePow, l, r)
}
func (b *Builder) Rem(l, r backends.Op) (backends.Op, error) {
	return b.binary(backends.OpTypeRem, l, r)
}
func (b *Builder) LogicalAnd(l, r backends.Op) (backends.Op, error) {
	return b.binary(backends.OpTypeLogicalAnd, l, r)
}
func (b *Builder) LogicalOr(l, r backends.Op) (backends.Op, error) {
	return b.binary(backends.OpTypeLogicalOr, l, r)
}
func (b *Builder) LogicalXor(l, r backends.Op) (backends.Op, error) {
	return b.binary(backends.OpTypeLogicalXor, l, r)
}
func (b *Builder) BitwiseAnd(l, r backends.Op) (backends.Op, error) {
	return b.binary(backends.OpTypeBitwiseAnd, l, r)
}
func (b *Builder) BitwiseOr(l, r backends.Op) (backends.Op, error) {
	return b.binary(backends.OpTypeBitwiseOr, l, r)
}
func (b *Builder) BitwiseXor(l, r backends.Op) (backends.Op, error) {
	return b.binary(backends.OpTypeBitwiseXor, l, r)
}
func (b *Builder) ShiftLeft(l, r backends.Op) (backends.Op, error) {
	return b.shift(backends.OpTypeShiftLeft, l, r)
}
func (b *Builder) ShiftRightLogical(l, r backends.Op) (backends.Op, error) {
	return b.shift(backends.OpTypeShiftRightLogical, l, r)
}
func (b *Builder) ShiftRightArithmetic(l, r backends.Op) (backends.Op, error) {
	return b.shift(backends.OpTypeShiftRightArithmetic, l, r)
}

// shift builds a shift with the shape rules of the bitwise ops (integer operands of one dtype,
// broadcasting as any binary op); GoMLX's shapeinference does not list the shifts.
func (b *Builder) shift(op backends.OpType, lhs, rhs backends.Op) (backends.Op, error) {
	ns, err := b.nodesOf(lhs, rhs)
	if err != nil {
		return nil, err
	}
	s, err := shapeinference.BinaryOp(backends.OpTypeBitwiseAnd, ns[0].shape, ns[1].shape)
	if err != nil {
		return nil, fmt.Errorf("backend %s: %s: %w", BackendName, op, err)
	}
	if err := checkDType(op, s.DType); err != nil {
		return nil, err
	}
	return b.add(op, s, nil, ns[0], ns[1]), nil
}
func (b *Builder) Equal(l, r backends.Op) (backends.Op, error) {
	return b.binary(backends.OpTypeEqual, l, r)
}
func (b *Builder) NotEqual(l, r backends.Op) (backends.Op, error) {
	return b.binary(backends.OpTypeNotEqual, l, r)
}
func (b *Builder) LessThan(l, r backends.Op) (backends.Op, error) {
	return b.binary(backends.OpTypeLessThan, l, r)
}
func (b *Builder) LessOrEqual(l, r backends.Op) (backends.Op, error) {
	return b.binary(backends.OpTypeLessOrEqual, l, r)
}
func (b *Builder) GreaterThan(l, r backends.Op) (backends.Op, error) {
	return b.binary(backends.OpTypeGreaterThan, l, r)
}
func (b *Builder) GreaterOrEqual(l, r backends.Op) (backends.Op, error) {
	return b.binary(backends.OpTypeGreaterOrEqual, l, r)
}

// Where implements backends.Builder.
func (b *Builder) Where(cond, onTrue, onFalse backends.Op) (backends.Op, error) {
	ns, err := b.nodesOf(cond, onTrue, onFalse)
	if err != nil {
		return nil, err
	}
	s, err := shapeinference.WhereOp(ns[0].shape, ns[1].shape, ns[2].shape)
	if err != nil {
		return nil, err
	}
	return b.add(backends.OpTypeWhere, s, nil, ns...), nil
}

// Clamp implements backends.Builder: min and max may be scalars.
func (b *Builder) Clamp(lo, x, hi backends.Op) (backends.Op, error) {
	ns, err := b.nodesOf(lo, x, hi)
	if err != nil {
		return nil, err
	}
	for _, m := range []*node{ns[0], ns[2]} {
		if m.shape.DType != ns[1].shape.DType || (!m.shape.IsScalar() && !m.shape.Equal(ns[1].shape)) {
			return nil, fmt.Errorf("backend %s: Clamp bounds %s must be scalars or match %s", BackendName, m.shape, ns[1].shape)
		}
	}
	if err := checkDType(backends.OpTypeClamp, ns[1].shape.DType); err != nil {
		return nil, err
	}
	return b.add(backends.OpTypeClamp, ns[1].shape, nil, ns...), nil
}

// ConvertDType implements backends.Builder.
func (b *Builder) ConvertDType(x backends.Op, dt dtypes.DType) (backends.Op, error) {
	ns, err := b.nodesOf(x)
	if err != nil {
		return nil, err
	}
	for _, d := range []dtypes.DType{ns[0].shape.DType, dt} {
		if !supportedDTypes[d] && !convertibleDTypes[d] {
			return nil, fmt.Errorf("backend %s: op ConvertDType: dtype %s not implemented", BackendName, d)
		}
	}
	s := ns[0].shape.Clone()
	s.DType = dt
	return b.add(backends.OpTypeConvertDType, s, nil, ns[0]), nil
}

// Bitcast implements backends.Builder, for dtypes of the same size only.
func (b *Builder) Bitcast(x backends.Op, dt dtypes.DType) (backends.Op, error) {
	ns, err := b.nodesOf(x)
	if err != nil {
		return nil, err
	}
	if ns[0].shape.DType.Size() != dt.Size() {
		return nil, fmt.Errorf("backend %s: op Bitcast between dtypes of different sizes (%s to %s) not implemented", BackendName, ns[0].shape.DType, dt)
	}
	s := ns[0].shape.Clone()
	s.DType = dt
	// The same bytes under another dtype: a view, like a reshape.
	return b.add(backends.OpTypeReshape, s, nil, ns[0]), nil
}

// Reshape implements backends.Builder.
func (b *Builder) Reshape(x backends.Op, dims ...int) (backends.Op, error) {
	ns, err := b.nodesOf(x)
	if err != nil {
		return nil, err
	}
	s, err := shapeinference.ReshapeOp(ns[0].shape, dims)
	if err != nil {
		return nil, err
	}
	return b.add(backends.OpTypeReshape, s, nil, ns[0]), nil
}

// Transpose implements backends.Builder.
func (b *Builder) Transpose(x backends.Op, perm ...int) (backends.Op, error) {
	ns, err := b.nodesOf(x)
	if err != nil {
		return nil, err
	}
	s, err := shapeinference.TransposeOp(ns[0].shape, perm)
	if err != nil {
		return nil, err
	}
	if keepsOrder(ns[0].shape.Dimensions, perm) {
		// The same bytes in the same order: a free view. Autodiff emits such transposes
		// (identity permutations in the gradients of products), a copy each.
		return b.add(backends.OpTypeReshape, s, nil, ns[0]), nil
	}
	return b.add(backends.OpTypeTranspose, s, slices.Clone(perm), ns[0]), nil
}

// keepsOrder reports whether transposing dims by perm leaves the elements in memory order: the
// axes longer than 1 keep their relative order.
func keepsOrder(dims, perm []int) bool {
	last := -1
	for _, p := range perm {
		if dims[p] == 1 {
			continue
		}
		if p < last {
			return false
		}
		last = p
	}
	return true
}

// BroadcastInDim implements backends.Builder.
func (b *Builder) BroadcastInDim(x backends.Op, out shapes.Shape, axes []int) (backends.Op, error) {
	ns, err := b.nodesOf(x)
	if err != nil {
		return nil, err
	}
	if err := shapeinference.BroadcastInDimOp(ns[0].shape, out, axes); err != nil {
		return nil, err
	}
	return b.add(backends.OpTypeBroadcastInDim, out.Clone(), slices.Clone(axes), ns[0]), nil
}

type reduceAttr struct{ axes []int }

func (b *Builder) reduce(op backends.OpType, x backends.Op, axes []int) (backends.Op, error) {
	ns, err := b.nodesOf(x)
	if err != nil {
		return nil, err
	}
	if len(axes) == 0 {
		axes = make([]int, ns[0].shape.Rank())
		for i := range axes {
			axes[i] = i
		}
	}
	s, err := shapeinference.ReduceOp(ns[0].shape, axes)
	if err != nil {
		return nil, err
	}
	if err := checkDType(op, s.DType); err != nil {
		return nil, err
	}
	return b.add(op, s, &reduceAttr{axes: slices.Sorted(slices.Values(axes))}, ns[0]), nil
}

func (b *Builder) ReduceSum(x backends.Op, axes ...int) (backends.Op, error) {
	return b.reduce(backends.OpTypeReduceSum, x, axes)
}
func (b *Builder) ReduceMax(x backends.Op, axes ...int) (backends.Op, error) {
	return b.reduce(backends.OpTypeReduceMax, x, axes)
}
func (b *Builder) ReduceMin(x backends.Op, axes ...int) (backends.Op, error) {
	return b.reduce(backends.OpTypeReduceMin, x, axes)
}
func (b *Builder) ReduceProduct(x backends.Op, axes ...int) (backends.Op, error) {
	return b.reduce(backends.OpTypeReduceProduct, x, axes)
}
func (b *Builder) ReduceLogicalAnd(x backends.Op, axes ...int) (backends.Op, error) {
	return b.reduce(backends.OpTypeReduceLogicalAnd, x, axes)
}
func (b *Builder) ReduceLogicalOr(x backends.Op, axes ...int) (backends.Op, error) {
	return b.reduce(backends.OpTypeReduceLogicalOr, x, axes)
}

type argMinMaxAttr struct {
	axis  int
	isMin bool
}

// ArgMinMax implements backends.Builder.
func (b *Builder) ArgMinMax(x backends.Op, axis int, dt dtypes.DType, isMin bool) (backends.Op, error) {
	ns, err := b.nodesOf(x)
	if err != nil {
		return nil, err
	}
	s, err := shapeinference.ArgMinMaxOp(ns[0].shape, axis, dt)
	if err != nil {
		return nil, err
	}
	if err := checkDType(backends.OpTypeArgMinMax, ns[0].shape.DType); err != nil {
		return nil, err
	}
	if err := checkDType(backends.OpTypeArgMinMax, dt); err != nil {
		return nil, err
	}
	return b.add(backends.OpTypeArgMinMax, s, &argMinMaxAttr{axis: axis, isMin: isMin}, ns[0]), nil
}

// Iota implements backends.Builder.
func (b *Builder) Iota(s shapes.Shape, axis int) (backends.Op, error) {
	if b.compiled {
		return nil, fmt.Errorf("backend %s: builder %q already compiled", BackendName, b.name)
	}
	if axis < 0 || axis >= s.Rank() {
		return nil, fmt.Errorf("backend %s: Iota axis %d out of range for %s", BackendName, axis, s)
	}
	if err := checkDType(backends.OpTypeIota, s.DType); err != nil {
		return nil, err
	}
	return b.add(backends.OpTypeIota, s.Clone(), axis), nil
}

type dotAttr struct {
	lhsContract, lhsBatch, rhsContract, rhsBatch []int
}

// Dot implements backends.Builder: XLA's Dot on rank 1 and 2 operands.
func (b *Builder) Dot(lhs, rhs backends.Op) (backends.Op, error) {
	ns, err := b.nodesOf(lhs, rhs)
	if err != nil {
		return nil, err
	}
	lr, rr := ns[0].shape.Rank(), ns[1].shape.Rank()
	if lr < 1 || lr > 2 || rr < 1 || rr > 2 {
		return nil, fmt.Errorf("backend %s: Dot takes rank 1 or 2 operands, got %s and %s", BackendName, ns[0].shape, ns[1].shape)
	}
	return b.DotGeneral(lhs, []int{lr - 1}, nil, rhs, []int{0}, nil)
}

// DotGeneral implements backends.Builder. The output is [batch..., lhs free..., rhs free...].
func (b *Builder) DotGeneral(lhs backends.Op, lhsContract, lhsBatch []int, rhs backends.Op, rhsContract, rhsBatch []int) (backends.Op, error) {
	ns, err := b.nodesOf(lhs, rhs)
	if err != nil {
		return nil, err
	}
	ls, rs := ns[0].shape, ns[1].shape
	if ls.DType != rs.DType {
		return nil, fmt.Errorf("backend %s: DotGeneral of %s and %s: dtypes differ", BackendName, ls, rs)
	}
	if len(lhsContract) != len(rhsContract) || len(lhsBatch) != len(rhsBatch) {
		return nil, fmt.Errorf("backend %s: DotGeneral: %d/%d contracting and %d/%d batch axes", BackendName,
			len(lhsContract), len(rhsContract), len(lhsBatch), len(rhsBatch))
	}
	if err := checkDType(backends.OpTypeDotGeneral, ls.DType); err != nil {
		return nil, err
	}
	used := func(s shapes.Shape, lists ...[]int) ([]bool, error) {
		u := make([]bool, s.Rank())
		for _, l := range lists {
			for _, a := range l {
				if a < 0 || a >= s.Rank() || u[a] {
					return nil, fmt.Errorf("backend %s: DotGeneral: axis %d invalid or repeated for %s", BackendName, a, s)
				}
				u[a] = true
			}
		}
		return u, nil
	}
	lu, err := used(ls, lhsContract, lhsBatch)
	if err != nil {
		return nil, err
	}
	ru, err := used(rs, rhsContract, rhsBatch)
	if err != nil {
		return nil, err
	}
	var dims []int
	for i, a := range lhsBatch {
		if ls.Dimensions[a] != rs.Dimensions[rhsBatch[i]] {
			return nil, fmt.Errorf("backend %s: DotGeneral batch axes %d and %d of %s and %s differ", BackendName, a, rhsBatch[i], ls, rs)
		}
		dims = append(dims, ls.Dimensions[a])
	}
	for i, a := range lhsContract {
		if ls.Dimensions[a] != rs.Dimensions[rhsContract[i]] {
			return nil, fmt.Errorf("backend %s: DotGeneral contracting axes %d and %d of %s and %s differ", BackendName, a, rhsContract[i], ls, rs)
		}
	}
	for a, u := range lu {
		if !u {
			dims = append(dims, ls.Dimensions[a])
		}
	}
	for a, u := range ru {
		if !u {
			dims = append(dims, rs.Dimensions[a])
		}
	}
	attr := &dotAttr{slices.Clone(lhsContract), slices.Clone(lhsBatch), slices.Clone(rhsContract), slices.Clone(rhsBatch)}
	return b.add(backends.OpTypeDotGeneral, shapes.Make(ls.DType, dims...), attr, ns[0], ns[1]), nil
}

type sliceAttr struct{ starts, limits, strides []int }

// Slice implements backends.Builder.
func (b *Builder) Slice(x backends.Op, starts, limits, strides []int) (backends.Op, error) {
	ns, err := b.nodesOf(x)
	if err != nil {
		return nil, err
	}
	if len(strides) == 0 {
		strides = make([]int, len(starts))
		for i := range strides {
			strides[i] = 1
		}
	}
	s, err := shapeinference.SliceOp(ns[0].shape, starts, limits, strides)
	if err != nil {
		return nil, err
	}
	return b.add(backends.OpTypeSlice, s, &sliceAttr{slices.Clone(starts), slices.Clone(limits), slices.Clone(strides)}, ns[0]), nil
}

// Concatenate implements backends.Builder.
func (b *Builder) Concatenate(axis int, ops ...backends.Op) (backends.Op, error) {
	ns, err := b.nodesOf(ops...)
	if err != nil {
		return nil, err
	}
	ss := make([]shapes.Shape, len(ns))
	for i, n := range ns {
		ss[i] = n.shape
	}
	s, err := shapeinference.ConcatenateOp(ss, axis)
	if err != nil {
		return nil, err
	}
	return b.add(backends.OpTypeConcatenate, s, axis, ns...), nil
}

type gatherAttr struct {
	indexVectorAxis                                            int
	offsetOutputAxes, collapsedSliceAxes, startIndexMap, sizes []int
}

// Gather implements backends.Builder.
func (b *Builder) Gather(operand, indices backends.Op, indexVectorAxis int, offsetOutputAxes, collapsedSliceAxes, startIndexMap, sliceSizes []int, sorted bool) (backends.Op, error) {
	ns, err := b.nodesOf(operand, indices)
	if err != nil {
		return nil, err
	}
	s, err := shapeinference.Gather(ns[0].shape, ns[1].shape, indexVectorAxis, offsetOutputAxes, collapsedSliceAxes, startIndexMap, sliceSizes, sorted)
	if err != nil {
		return nil, err
	}
	if !ns[1].shape.DType.IsInt() {
		return nil, fmt.Errorf("backend %s: Gather indices must be integers, got %s", BackendName, ns[1].shape)
	}
	attr := &gatherAttr{indexVectorAxis, slices.Clone(offsetOutputAxes), slices.Clone(collapsedSliceAxes), slices.Clone(startIndexMap), slices.Clone(sliceSizes)}
	return b.add(backends.OpTypeGather, s, attr, ns[0], ns[1]), nil
}

type scatterAttr struct {
	indexVectorAxis                                                int
	updateWindowAxes, insertedWindowAxes, scatterAxesToOperandAxes []int
}

func (b *Builder) scatter(op backends.OpType, operand, indices, updates backends.Op, indexVectorAxis int, updateWindowAxes, insertedWindowAxes, scatterAxesToOperandAxes []int) (backends.Op, error) {
	ns, err := b.nodesOf(operand, indices, updates)
	if err != nil {
		return nil, err
	}
	s, err := shapeinference.ScatterOp(ns[0].shape, ns[1].shape, ns[2].shape, indexVectorAxis, updateWindowAxes, insertedWindowAxes, scatterAxesToOperandAxes)
	if err != nil {
		return nil, err
	}
	// Halves are scattered too: a KV cache kept in float16 or bfloat16 is written this way.
	if err := checkDType(op, s.DType); (err != nil && !convertibleDTypes[s.DType]) || s.DType == dtypes.Bool {
		return nil, fmt.Errorf("backend %s: op %s: dtype %s not implemented", BackendName, op, s.DType)
	}
	if !ns[1].shape.DType.IsInt() {
		return nil, fmt.Errorf("backend %s: %s indices must be integers, got %s", BackendName, op, ns[1].shape)
	}
	attr := &scatterAttr{indexVectorAxis, slices.Clone(updateWindowAxes), slices.Clone(insertedWindowAxes), slices.Clone(scatterAxesToOperandAxes)}
	return b.add(op, s, attr, ns...), nil
}

func (b *Builder) ScatterSum(operand, indices, updates backends.Op, indexVectorAxis int, updateWindowAxes, insertedWindowAxes, scatterAxesToOperandAxes []int, _, _ bool) (backends.Op, error) {
	return b.scatter(backends.OpTypeScatterSum, operand, indices, updates, indexVectorAxis, updateWindowAxes, insertedWindowAxes, scatterAxesToOperandAxes)
}
func (b *Builder) ScatterMax(operand, indices, updates backends.Op, indexVectorAxis int, updateWindowAxes, insertedWindowAxes, scatterAxesToOperandAxes []int, _, _ bool) (backends.Op, error) {
	return b.scatter(backends.OpTypeScatterMax, operand, indices, updates, indexVectorAxis, updateWindowAxes, insertedWindowAxes, scatterAxesToOperandAxes)
}
func (b *Builder) ScatterMin(operand, indices, updates backends.Op, indexVectorAxis int, updateWindowAxes, insertedWindowAxes, scatterAxesToOperandAxes []int, _, _ bool) (backends.Op, error) {
	return b.scatter(backends.OpTypeScatterMin, operand, indices, updates, indexVectorAxis, updateWindowAxes, insertedWindowAxes, scatterAxesToOperandAxes)
}

// Pad implements backends.Builder.
func (b *Builder) Pad(x, fill backends.Op, axes ...backends.PadAxis) (backends.Op, error) {
	ns, err := b.nodesOf(x, fill)
	if err != nil {
		return nil, err
	}
	xs := ns[0].shape
	if !ns[1].shape.IsScalar() || ns[1].shape.DType != xs.DType {
		return nil, fmt.Errorf("backend %s: Pad value %s must be a scalar of %s", BackendName, ns[1].shape, xs.DType)
	}
	if len(axes) > xs.Rank() {
		return nil, fmt.Errorf("backend %s: Pad: %d axes for %s", BackendName, len(axes), xs)
	}
	full := make([]backends.PadAxis, xs.Rank())
	copy(full, axes)
	dims := make([]int, xs.Rank())
	for i, d := range xs.Dimensions {
		p := full[i]
		if p.Interior < 0 {
			return nil, fmt.Errorf("backend %s: Pad: negative interior padding on axis %d", BackendName, i)
		}
		dims[i] = p.Start + p.End + d + max(d-1, 0)*p.Interior
		if dims[i] < 0 {
			return nil, fmt.Errorf("backend %s: Pad: axis %d of %s would have %d elements", BackendName, i, xs, dims[i])
		}
	}
	return b.add(backends.OpTypePad, shapes.Make(xs.DType, dims...), full, ns...), nil
}

// Reverse implements backends.Builder.
func (b *Builder) Reverse(x backends.Op, axes ...int) (backends.Op, error) {
	ns, err := b.nodesOf(x)
	if err != nil {
		return nil, err
	}
	for _, a := range axes {
		if a < 0 || a >= ns[0].shape.Rank() {
			return nil, fmt.Errorf("backend %s: Reverse axis %d out of range for %s", BackendName, a, ns[0].shape)
		}
	}
	return b.add(backends.OpTypeReverse, ns[0].shape, slices.Clone(axes), ns[0]), nil
}

// DynamicSlice implements backends.Builder: one scalar start index per axis.
func (b *Builder) DynamicSlice(x backends.Op, starts []backends.Op, sizes []int) (backends.Op, error) {
	ns, err := b.nodesOf(append([]backends.Op{x}, starts...)...)
	if err != nil {
		return nil, err
	}
	xs := ns[0].shape
	if len(starts) != xs.Rank() || len(sizes) != xs.Rank() {
		return nil, fmt.Errorf("backend %s: DynamicSlice of %s needs %d start indices and sizes", BackendName, xs, xs.Rank())
	}
	for i, s := range ns[1:] {
		if !s.shape.IsScalar() || !s.shape.DType.IsInt() {
			return nil, fmt.Errorf("backend %s: DynamicSlice start index %d must be an integer scalar, got %s", BackendName, i, s.shape)
		}
		if sizes[i] < 0 || sizes[i] > xs.Dimensions[i] {
			return nil, fmt.Errorf("backend %s: DynamicSlice size %d out of range for axis %d of %s", BackendName, sizes[i], i, xs)
		}
	}
	return b.add(backends.OpTypeDynamicSlice, shapes.Make(xs.DType, sizes...), nil, ns...), nil
}

// DynamicUpdateSlice implements backends.Builder.
func (b *Builder) DynamicUpdateSlice(x, update backends.Op, starts []backends.Op) (backends.Op, error) {
	ns, err := b.nodesOf(append([]backends.Op{x, update}, starts...)...)
	if err != nil {
		return nil, err
	}
	xs, us := ns[0].shape, ns[1].shape
	if us.DType != xs.DType || us.Rank() != xs.Rank() || len(starts) != xs.Rank() {
		return nil, fmt.Errorf("backend %s: DynamicUpdateSlice of %s with %s and %d indices", BackendName, xs, us, len(starts))
	}
	for i, s := range ns[2:] {
		if !s.shape.IsScalar() || !s.shape.DType.IsInt() {
			return nil, fmt.Errorf("backend %s: DynamicUpdateSlice start index %d must be an integer scalar, got %s", BackendName, i, s.shape)
		}
		if us.Dimensions[i] > xs.Dimensions[i] {
			return nil, fmt.Errorf("backend %s: DynamicUpdateSlice update %s larger than %s", BackendName, us, xs)
		}
	}
	return b.add(backends.OpTypeDynamicUpdateSlice, xs, nil, ns...), nil
}

// RNGBitGenerator implements backends.Builder with Go's PCG (math/rand/v2), seeded from the
// first two words of the state, as GoMLX's pure-Go backend does.
func (b *Builder) RNGBitGenerator(state backends.Op, s shapes.Shape) (backends.Op, backends.Op, error) {
	ns, err := b.nodesOf(state)
	if err != nil {
		return nil, nil, err
	}
	if !ns[0].shape.Equal(backends.RNGStateShape) {
		return nil, nil, fmt.Errorf("backend %s: RNGBitGenerator state must be %s, got %s", BackendName, backends.RNGStateShape, ns[0].shape)
	}
	if err := checkDType(backends.OpTypeRNGBitGenerator, s.DType); err != nil {
		return nil, nil, err
	}
	n := b.add(backends.OpTypeRNGBitGenerator, ns[0].shape, nil, ns[0])
	values := b.add(backends.OpTypeRNGBitGenerator, s.Clone(), nil, n)
	values.owner = n
	n.extra = []*node{values}
	return n, values, nil
}
