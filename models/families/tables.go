package families

import m "github.com/posformer/posformer/models"

// Llama (llama, mistral, qwen2): RMSNorm, SwiGLU, no biases but optionally on q, k and v
// (qwen2) or on every projection.
var Llama = &Family{
	Name:    "Llama",
	HFLayer: "model.layers.%d.", GGUFLayer: "blk.%d.",
	Global: []Tensor{
		{Ours: m.TokEmbeddings, HF: "model.embed_tokens.weight", GGUF: "token_embd.weight", Shape: dims(Vocab, Model)},
		{Ours: m.NormWeight, HF: "model.norm.weight", GGUF: "output_norm.weight", Shape: dims(Model)},
		{Ours: m.OutputWeight, HF: "lm_head.weight", HFHead: true, GGUF: "output.weight", Shape: dims(Vocab, Model), When: untied},
	},
	Layer: []Tensor{
		{Ours: m.AttnNormWeight, HF: "input_layernorm.weight", GGUF: "attn_norm.weight", Shape: dims(Model)},
		{Ours: m.FFNNormWeight, HF: "post_attention_layernorm.weight", GGUF: "ffn_norm.weight", Shape: dims(Model)},
		{Ours: m.AttnQWeight, HF: "self_attn.q_proj.weight", GGUF: "attn_q.weight", Shape: dims(QDim, Model), Rotary: true},
		{Ours: m.AttnQBias, HF: "self_attn.q_proj.bias", GGUF: "attn_q.bias", Shape: dims(QDim), When: qkvBias},
		{Ours: m.AttnKWeight, HF: "self_attn.k_proj.weight", GGUF: "attn_k.weight", Shape: dims(KVDim, Model), Rotary: true},
		{Ours: m.AttnKBias, HF: "self_attn.k_proj.bias", GGUF: "attn_k.bias", Shape: dims(KVDim), When: qkvBias},
		{Ours: m.AttnVWeight, HF: "self_attn.v_proj.weight", GGUF: "attn_v.weight", Shape: dims(KVDim, Model)},
		{Ours: m.AttnVBias, HF: "self_attn.v_proj.bias", GGUF: "attn_v.bias", Shape: dims(KVDim), When: qkvBias},
		{Ours: m.AttnOutWeight, HF: "self_attn.o_proj.weight", GGUF: "attn_output.weight", Shape: dims(Model, QDim)},
		{Ours: m.AttnOutBias, HF: "self_attn.o_proj.bias", GGUF: "attn_output.bias", Shape: dims(Model), When: otherBias},
		{Ours: m.FFNGateWeight, HF: "mlp.gate_proj.weight", GGUF: "ffn_gate.weight", Shape: dims(Hidden, Model)},
		{Ours: m.FFNGateBias, HF: "mlp.gate_proj.bias", GGUF: "ffn_gate.bias", Shape: dims(Hidden), When: otherBias},
		{Ours: m.FFNUpWeight, HF: "mlp.up_proj.weight", GGUF: "ffn_up.weight", Shape: dims(Hidden, Model)},
		{Ours: m.FFNUpBias, HF: "mlp.up_proj.bias", GGUF: "ffn_up.bias", Shape: dims(Hidden), When: otherBias},
		{Ours: m.FFNDownWeight, HF: "mlp.down_proj.weight", GGUF: "ffn_down.weight", Shape: dims(Model, Hidden)},
		{Ours: m.FFNDownBias, HF: "mlp.down_proj.bias", GGUF: "ffn_down.bias", Shape: dims(Model), When: otherBias},
	},
}

// GPT2 is GPT-2: a learned position table, pre-norm LayerNorm, biases everywhere, q, k and v
// fused in one tensor, and Hugging Face's Conv1D matrices stored [in, out].
var GPT2 = &Family{
	Name:    "GPT-2",
	HFLayer: "h.%d.", GGUFLayer: "blk.%d.",
	Global: []Tensor{
		{Ours: m.TokEmbeddings, HF: "wte.weight", GGUF: "token_embd.weight", Shape: dims(Vocab, Model)},
		{Ours: m.PositionTable, HF: "wpe.weight", GGUF: "position_embd.weight", Shape: dims(Positions, Model)},
		{Ours: m.NormWeight, HF: "ln_f.weight", GGUF: "output_norm.weight", Shape: dims(Model)},
		{Ours: m.NormBias, HF: "ln_f.bias", GGUF: "output_norm.bias", Shape: dims(Model)},
		{Ours: m.OutputWeight, HF: "lm_head.weight", HFHead: true, GGUF: "output.weight", Shape: dims(Vocab, Model), When: untied},
	},
	Layer: []Tensor{
		{Ours: m.AttnNormWeight, HF: "ln_1.weight", GGUF: "attn_norm.weight", Shape: dims(Model)},
		{Ours: m.AttnNormBias, HF: "ln_1.bias", GGUF: "attn_norm.bias", Shape: dims(Model)},
		{Ours: m.FFNNormWeight, HF: "ln_2.weight", GGUF: "ffn_norm.weight", Shape: dims(Model)},
		{Ours: m.FFNNormBias, HF: "ln_2.bias", GGUF: "ffn_norm.bias", Shape: dims(Model)},
		{Ours: m.AttnQWeight, HF: "attn.c_attn.weight", GGUF: "attn_qkv.weight", Shape: dims(Model, Model), Conv1D: true, Part: 0, Parts: 3},
		{Ours: m.AttnQBias, HF: "attn.c_attn.bias", GGUF: "attn_qkv.bias", Shape: dims(Model), Part: 0, Parts: 3},
		{Ours: m.AttnKWeight, HF: "attn.c_attn.weight", GGUF: "attn_qkv.weight", Shape: dims(Model, Model), Conv1D: true, Part: 1, Parts: 3},
		{Ours: m.AttnKBias, HF: "attn.c_attn.bias", GGUF: "attn_qkv.bias", Shape: dims(Model), Part: 1, Parts: 3},
		{Ours: m.AttnVWeight, HF: "attn.c_attn.weight", GGUF: "attn_qkv.weight", Shape: dims(Model, Model), Conv1D: true, Part: 2, Parts: 3},
		{Ours: m.AttnVBias, HF: "attn.c_attn.bias", GGUF: "attn_qkv.bias", Shape: dims(Model), Part: 2, Parts: 3},
		{Ours: m.AttnOutWeight, HF: "attn.c_proj.weight", GGUF: "attn_output.weight", Shape: dims(Model, Model), Conv1D: true},
		{Ours: m.AttnOutBias, HF: "attn.c_proj.bias", GGUF: "attn_output.bias", Shape: dims(Model)},
		{Ours: m.FFNGateWeight, HF: "mlp.c_fc.weight", GGUF: "ffn_up.weight", Shape: dims(Hidden, Model), Conv1D: true},
		{Ours: m.FFNGateBias, HF: "mlp.c_fc.bias", GGUF: "ffn_up.bias", Shape: dims(Hidden)},
		{Ours: m.FFNDownWeight, HF: "mlp.c_proj.weight", GGUF: "ffn_down.weight", Shape: dims(Model, Hidden), Conv1D: true},
		{Ours: m.FFNDownBias, HF: "mlp.c_proj.bias", GGUF: "ffn_down.bias", Shape: dims(Model)},
	},
}

// BERT is BERT's masked-LM model, in Hugging Face's layout only: post-norm blocks, token-type
// embeddings, a norm on the embeddings, and a head transform before the vocabulary.
var BERT = &Family{
	Name:    "BERT",
	HFLayer: "encoder.layer.%d.",
	Global: []Tensor{
		{Ours: m.TokEmbeddings, HF: "embeddings.word_embeddings.weight", Shape: dims(Vocab, Model)},
		{Ours: m.PositionTable, HF: "embeddings.position_embeddings.weight", Shape: dims(Positions, Model)},
		{Ours: m.TokenTypes, HF: "embeddings.token_type_embeddings.weight", Shape: dims(TokenTypes, Model)},
		{Ours: m.EmbedNormWeight, HF: "embeddings.LayerNorm.weight", HFAliases: []string{"embeddings.LayerNorm.gamma"}, Shape: dims(Model)},
		{Ours: m.EmbedNormBias, HF: "embeddings.LayerNorm.bias", HFAliases: []string{"embeddings.LayerNorm.beta"}, Shape: dims(Model)},
		{Ours: m.HeadDenseWeight, HF: "cls.predictions.transform.dense.weight", HFHead: true, Shape: dims(Model, Model)},
		{Ours: m.HeadDenseBias, HF: "cls.predictions.transform.dense.bias", HFHead: true, Shape: dims(Model)},
		{Ours: m.HeadNormWeight, HF: "cls.predictions.transform.LayerNorm.weight", HFHead: true,
			HFAliases: []string{"cls.predictions.transform.LayerNorm.gamma"}, Shape: dims(Model)},
		{Ours: m.HeadNormBias, HF: "cls.predictions.transform.LayerNorm.bias", HFHead: true,
			HFAliases: []string{"cls.predictions.transform.LayerNorm.beta"}, Shape: dims(Model)},
		{Ours: m.OutputBias, HF: "cls.predictions.bias", HFHead: true, HFAliases: []string{"cls.predictions.decoder.bias"}, Shape: dims(Vocab)},
		{Ours: m.OutputWeight, HF: "cls.predictions.decoder.weight", HFHead: true, Shape: dims(Vocab, Model), When: untied},
	},
	Layer: []Tensor{
		{Ours: m.AttnQWeight, HF: "attention.self.query.weight", Shape: dims(Model, Model)},
		{Ours: m.AttnQBias, HF: "attention.self.query.bias", Shape: dims(Model)},
		{Ours: m.AttnKWeight, HF: "attention.self.key.weight", Shape: dims(Model, Model)},
		{Ours: m.AttnKBias, HF: "attention.self.key.bias", Shape: dims(Model)},
		{Ours: m.AttnVWeight, HF: "attention.self.value.weight", Shape: dims(Model, Model)},
		{Ours: m.AttnVBias, HF: "attention.self.value.bias", Shape: dims(Model)},
		{Ours: m.AttnOutWeight, HF: "attention.output.dense.weight", Shape: dims(Model, Model)},
		{Ours: m.AttnOutBias, HF: "attention.output.dense.bias", Shape: dims(Model)},
		{Ours: m.FFNGateWeight, HF: "intermediate.dense.weight", Shape: dims(Hidden, Model)},
		{Ours: m.FFNGateBias, HF: "intermediate.dense.bias", Shape: dims(Hidden)},
		{Ours: m.FFNDownWeight, HF: "output.dense.weight", Shape: dims(Model, Hidden)},
		{Ours: m.FFNDownBias, HF: "output.dense.bias", Shape: dims(Model)},
		{Ours: m.AttnNormWeight, HF: "attention.output.LayerNorm.weight", HFAliases: []string{"attention.output.LayerNorm.gamma"}, Shape: dims(Model)},
		{Ours: m.AttnNormBias, HF: "attention.output.LayerNorm.bias", HFAliases: []string{"attention.output.LayerNorm.beta"}, Shape: dims(Model)},
		{Ours: m.FFNNormWeight, HF: "output.LayerNorm.weight", HFAliases: []string{"output.LayerNorm.gamma"}, Shape: dims(Model)},
		{Ours: m.FFNNormBias, HF: "output.LayerNorm.bias", HFAliases: []string{"output.LayerNorm.beta"}, Shape: dims(Model)},
	},
}
