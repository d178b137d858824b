package positional

// NoPE: no positional encoding at all.
//
//	logits_ij = q_i · k_j / sqrt(d)      (nothing depends on i or j)
//
// A causal decoder can still infer order from the mask (Haviv et al. 2022, "Transformer
// Language Models without Positional Encodings Still Learn Positional Information";
// Kazemnejad et al. 2023, "The Impact of Positional Encoding on Length Generalization in
// Transformers"). Without a causal mask the model is permutation-equivariant.

func init() {
	Register("none", func(opts *Options, arch Arch) (Scheme, error) { return NoPE{}, nil })
}

// NoPE implements no hook.
type NoPE struct{}

// Name implements Scheme.
func (NoPE) Name() string { return "none" }
