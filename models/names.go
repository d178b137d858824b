package models

import "fmt"

// The canonical names of a model's tensors: what our own checkpoints store, and what every
// other format's mapping translates to (models/families for Llama, GPT-2 and BERT, llama2c's
// fixed file order). They are TensorName of the variables Model.Forward creates; a test
// (TestCanonicalNames) checks the two against each other.

// Tensors outside the blocks.
const (
	TokEmbeddings   = "tok_embeddings.weight" // [vocab, dim]
	PositionTable   = "positional.table"      // a learned position table [positions, dim]
	TokenTypes      = "token_types.weight"    // [types, dim]
	EmbedNormWeight = "embed_norm.weight"
	EmbedNormBias   = "embed_norm.bias"
	NormWeight      = "norm.weight" // the final norm of a pre-norm model
	NormBias        = "norm.bias"
	HeadDenseWeight = "head.dense.weight" // BERT's masked-LM head transform
	HeadDenseBias   = "head.dense.bias"
	HeadNormWeight  = "head.norm.weight"
	HeadNormBias    = "head.norm.bias"
	OutputWeight    = "output.weight" // the head onto the vocabulary, absent when tied
	OutputBias      = "output.bias"
)

// Tensors of each block, named within it (LayerTensor gives the full name).
const (
	AttnNormWeight = "attn_norm.weight"
	AttnNormBias   = "attn_norm.bias"
	AttnQWeight    = "attn.wq.weight" // [heads·head_dim, dim]
	AttnQBias      = "attn.wq.bias"
	AttnKWeight    = "attn.wk.weight" // [kv_heads·head_dim, dim]
	AttnKBias      = "attn.wk.bias"
	AttnVWeight    = "attn.wv.weight"
	AttnVBias      = "attn.wv.bias"
	AttnOutWeight  = "attn.wo.weight" // [dim, heads·head_dim]
	AttnOutBias    = "attn.wo.bias"
	FFNNormWeight  = "ffn_norm.weight"
	FFNNormBias    = "ffn_norm.bias"
	FFNGateWeight  = "ffn.w1.weight" // [hidden, dim]: SwiGLU's gate, or the one input matrix of a GELU block
	FFNGateBias    = "ffn.w1.bias"
	FFNDownWeight  = "ffn.w2.weight" // [dim, hidden]
	FFNDownBias    = "ffn.w2.bias"
	FFNUpWeight    = "ffn.w3.weight" // [hidden, dim]: SwiGLU's second input matrix
	FFNUpBias      = "ffn.w3.bias"
)

// layerPrefix starts the names of block i's tensors (and is its variables' scope).
const layerPrefix = "layer_"

// LayerScope is the context scope of block i's variables.
func LayerScope(i int) string { return fmt.Sprintf("%s%d", layerPrefix, i) }

// LayerTensor is the full name of the tensor name (AttnQWeight, say) of block i:
// LayerTensor(0, AttnQWeight) is "layer_0.attn.wq.weight".
func LayerTensor(i int, name string) string { return LayerScope(i) + "." + name }
