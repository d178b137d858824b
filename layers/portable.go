package layers

// Portable graphs: the ops every graph of layers and positional avoids, and why.
//
// Models are GoMLX graphs that any backend runs. The reference backend that the conformance
// tests compare with, GoMLX's pure-Go simplego (v0.26), lacks some ops, so graph code is written
// without them; each workaround is exact, not an approximation. This is the whole list: a site
// that avoids an op says so in one line and points here.
//
//	op avoided            reason                                   written instead as            where
//	Slice                 its gradient is built from Pad           products with fixed 0/±1      positional/rope.go (pair rotation),
//	                                                               matrices, or gathers          positional/xl.go (swapping halves)
//	Pad                   not implemented                          (not needed once Slice is
//	                                                               avoided)
//	DynamicUpdateSlice    not implemented                          a scatter-add into the        attention.go (CacheWrite)
//	                                                               donated KV-cache buffer
//	ShiftRightLogical     not implemented                          integer division by 16        weight.go (Q4_0's high nibbles)
//	ConvertDType to F16   crashes the process                      float16 is widened to float32 models (loaders)
//	                                                               as a checkpoint is read
//	Gather with indices   rejected                                 both flattened to rank 2      positional/shaw.go (pickPerPair)
//	  of rank > operand+1
//
// Two more choices look like workarounds but are not: weight matrices are stored [out, in] as
// PyTorch stores them (x·Wᵀ contracts both operands' last axis, which every backend runs
// without a transpose), and softmax·V is normalized after the product (attention.go's
// SoftmaxValues: the division acts on [.., head_dim] instead of [.., keys]).
