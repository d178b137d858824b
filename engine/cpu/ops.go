package cpu

// lower maps each node to the step that computes it, and lists what the backend implements.

import (
	"fmt"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/shapeinference"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
)

// supportedDTypes are computed with; convertibleDTypes only converted from and to (and moved).
var (
	supportedDTypes = map[dtypes.DType]bool{
		dtypes.Float32: true, dtypes.Float64: true, dtypes.Bool: true,
		dtypes.Int8: true, dtypes.Int16: true, dtypes.Int32: true, dtypes.Int64: true,
		dtypes.Uint8: true, dtypes.Uint16: true, dtypes.Uint32: true, dtypes.Uint64: true,
	}
	convertibleDTypes = map[dtypes.DType]bool{dtypes.Float16: true, dtypes.BFloat16: true}
	movableDTypes     = map[dtypes.DType]bool{
		dtypes.Float32: true, dtypes.Float64: true, dtypes.Bool: true,
		dtypes.Int8: true, dtypes.Int16: true, dtypes.Int32: true, dtypes.Int64: true,
		dtypes.Uint8: true, dtypes.Uint16: true, dtypes.Uint32: true, dtypes.Uint64: true,
		dtypes.Float16: true, dtypes.BFloat16: true,
	}
)

var capabilities = func() backends.Capabilities {
	c := backends.Capabilities{Operations: map[backends.OpType]bool{}, DTypes: map[dtypes.DType]bool{}}
	for _, op := range []backends.OpType{
		backends.OpTypeParameter, backends.OpTypeConstant, backends.OpTypeIdentity,
		backends.OpTypeAbs, backends.OpTypeNeg, backends.OpTypeSign, backends.OpTypeExp, backends.OpTypeExpm1,
		backends.OpTypeLog, backends.OpTypeLog1p, backends.OpTypeSqrt, backends.OpTypeRsqrt, backends.OpTypeTanh,
		backends.OpTypeLogistic, backends.OpTypeSin, backends.OpTypeCos, backends.OpTypeErf, backends.OpTypeFloor,
		backends.OpTypeCeil, backends.OpTypeRound, backends.OpTypeIsFinite, backends.OpTypeIsNaN,
		backends.OpTypeLogicalNot, backends.OpTypeBitwiseNot,
		backends.OpTypeAdd, backends.OpTypeSub, backends.OpTypeMul, backends.OpTypeDiv, backends.OpTypeMax,
		backends.OpTypeMin, backends.OpTypePow, backends.OpTypeRem, backends.OpTypeLogicalAnd, backends.OpTypeLogicalOr,
		backends.OpTypeLogicalXor, backends.OpTypeBitwiseAnd, backends.OpTypeBitwiseOr, backends.OpTypeBitwiseXor,
		backends.OpTypeShiftLeft, backends.OpTypeShiftRightLogical, backends.OpTypeShiftRightArithmetic,
		backends.OpTypeEqual, backends.OpTypeNotEqual, backends.OpTypeLessThan, backends.OpTypeLessOrEqual,
		backends.OpTypeGreaterThan, backends.OpTypeGreaterOrEqual,
		backends.OpTypeWhere, backends.OpTypeClamp, backends.OpTypeConvertDType, backends.OpTypeBitcast,
		backends.OpTypeReshape, backends.OpTypeTranspose, backends.OpTypeBroadcastInDim,
		backends.OpTypeReduceSum, backends.OpTypeReduceMax, backends.OpTypeReduceMin, backends.OpTypeReduceProduct,
		backends.OpTypeReduceLogicalAnd, backends.OpTypeReduceLogicalOr, backends.OpTypeArgMinMax, backends.OpTypeIota,
		backends.OpTypeDot, backends.OpTypeDotGeneral, backends.OpTypeSlice, backends.OpTypeConcatenate,
		backends.OpTypeGather, backends.OpTypeScatterSum, backends.OpTypeScatterMax, backends.OpTypeScatterMin,
		backends.OpTypePad, backends.OpTypeReverse, backends.OpTypeDynamicSlice, backends.OpTypeDynamicUpdateSlice,
		backends.OpTypeRNGBitGenerator,
	} {
		c.Operations[op] = true
	}
	for dt := range movableDTypes {
		c.DTypes[dt] = true
	}
	return c
}()

func lower(lw *lowering) (stepFn, error) {
	op := lw.n.op
	switch {
	case shapeinference.StandardUnaryOperations.Has(op), op == backends.OpTypeIsFinite, op == backends.OpTypeIsNaN:
		return lowerUnary(lw)
	case shapeinference.StandardBinaryOperations.Has(op), shapeinference.ComparisonOperations.Has(op),
		op == backends.OpTypeShiftLeft, op == backends.OpTypeShiftRightLogical, op == backends.OpTypeShiftRightArithmetic:
		return lowerBinary(lw)
	}
	switch op {
	case backends.OpTypeWhere:
		return lowerWhere(lw)
	case backends.OpTypeClamp:
		return dispatchNumber(lw.n.shape.DType, clampStep{lw})
	case backends.OpTypeConvertDType:
		return lowerConvert(lw)
	case backends.OpTypeIota:
		return lowerIota(lw)
	case backends.OpTypeReduceSum, backends.OpTypeReduceMax, backends.OpTypeReduceMin, backends.OpTypeReduceProduct,
		backends.OpTypeReduceLogicalAnd, backends.OpTypeReduceLogicalOr:
		return lowerReduceOp(lw)
	case backends.OpTypeArgMinMax:
		return dispatchNumber(lw.n.inputs[0].shape.DType, argStep{lw})
	case backends.OpTypeDotGeneral:
		return lowerDot(lw)
	case backends.OpTypeTranspose:
		return lowerTranspose(lw)
	case backends.OpTypeBroadcastInDim:
		return lowerBroadcast(lw)
	case backends.OpTypeSlice:
		return lowerSlice(lw)
	case backends.OpTypeConcatenate:
		return lowerConcatenate(lw)
	case backends.OpTypePad:
		return lowerPad(lw)
	case backends.OpTypeReverse:
		return lowerReverse(lw)
	case backends.OpTypeGather:
		return lowerGather(lw)
	case backends.OpTypeScatterSum, backends.OpTypeScatterMax, backends.OpTypeScatterMin:
		return lowerScatter(lw)
	case backends.OpTypeDynamicSlice:
		return lowerDynamicSlice(lw)
	case backends.OpTypeDynamicUpdateSlice:
		return lowerDynamicUpdateSlice(lw)
	case backends.OpTypeRNGBitGenerator:
		return lowerRNG(lw)
	}
	return nil, fmt.Errorf("op %s not implemented", op)
}
