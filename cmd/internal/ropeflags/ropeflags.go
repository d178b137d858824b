// Package ropeflags registers llama.cpp's RoPE context-extension flags on a command and turns
// them into a Hugging Face rope_scaling block in a model's positional configuration
// (positional/rope_scaling.go), so that cmd/infer, cmd/bench and cmd/pe share one meaning:
//
//	--rope-scaling T      none | linear | ntk | dynamic | yarn (llama.cpp has none, linear, yarn)
//	--rope-scale S        context extension factor s (>= 1)
//	--rope-freq-scale F   1/s, as llama.cpp writes it
//	--rope-freq-base B    the base b (rope_theta)
//	--yarn-orig-ctx L     the trained context (default: the model's train_seq_len)
//	--yarn-beta-fast, --yarn-beta-slow   YaRN's ramp ends in turns over L (32, 1)
//	--yarn-attn-factor A  multiplies YaRN's 0.1·ln(s) + 1, as in llama.cpp
//	--grp-attn-n G        Self-Extend's group size (1: off), positional/selfextend.go
//	--grp-attn-w W        Self-Extend's neighbour window (512), as llama.cpp names them
//
// As in llama.cpp, a scale without a type means linear.
package ropeflags

import (
	"flag"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/positional"
)

// Flags holds the parsed values; zero means "not given".
type Flags struct {
	Scaling                      string
	Scale, FreqScale, FreqBase   float64
	OrigCtx                      int
	BetaFast, BetaSlow, AttnMult float64
	GroupN, GroupW               int // Self-Extend
}

// Types are the accepted --rope-scaling values.
var Types = []string{"none", "linear", "ntk", "dynamic", "yarn"}

// Register adds the flags to fs.
func Register(fs *flag.FlagSet) *Flags {
	f := &Flags{}
	fs.StringVar(&f.Scaling, "rope-scaling", "", "RoPE context extension: "+strings.Join(Types, ", ")+" (default: linear when --rope-scale is given)")
	fs.Float64Var(&f.Scale, "rope-scale", 0, "RoPE context extension factor s >= 1")
	fs.Float64Var(&f.FreqScale, "rope-freq-scale", 0, "RoPE frequency scale, 1/s (llama.cpp's form of --rope-scale)")
	fs.Float64Var(&f.FreqBase, "rope-freq-base", 0, "RoPE base (default: the model's)")
	fs.IntVar(&f.OrigCtx, "yarn-orig-ctx", 0, "original (trained) context for yarn and dynamic (default: the model's train_seq_len)")
	fs.Float64Var(&f.BetaFast, "yarn-beta-fast", 0, "YaRN: pairs turning more than this many times over the original context keep their frequency (32)")
	fs.Float64Var(&f.BetaSlow, "yarn-beta-slow", 0, "YaRN: pairs turning fewer times are fully interpolated (1)")
	fs.Float64Var(&f.AttnMult, "yarn-attn-factor", 0, "YaRN: multiplies the attention factor 0.1·ln(s) + 1 (1)")
	fs.IntVar(&f.GroupN, "grp-attn-n", 0, "Self-Extend: group size G, keys beyond the window attended at positions ⌊p/G⌋ (1: off)")
	fs.IntVar(&f.GroupW, "grp-attn-w", 0, "Self-Extend: neighbour window W, keys closer than W attended as trained (512)")
	return f
}

// Given reports whether any of the flags was set.
func (f *Flags) Given() bool { return *f != Flags{} }

// factor is s from --rope-scale or --rope-freq-scale (0 when neither is given).
func (f *Flags) factor() (float64, error) {
	s := f.Scale
	switch {
	case f.Scale < 0 || (f.Scale > 0 && f.Scale < 1):
		return 0, fmt.Errorf("--rope-scale must be >= 1 (it extends the context s times), got %g", f.Scale)
	case f.FreqScale < 0 || f.FreqScale > 1:
		return 0, fmt.Errorf("--rope-freq-scale must be in (0, 1] (it is 1/s), got %g", f.FreqScale)
	case f.FreqScale > 0 && f.Scale > 0 && math.Abs(f.Scale*f.FreqScale-1) > 1e-9:
		return 0, fmt.Errorf("--rope-scale %g and --rope-freq-scale %g disagree (one is 1/the other); give one", f.Scale, f.FreqScale)
	case f.FreqScale > 0:
		s = 1 / f.FreqScale
	}
	return s, nil
}

// Apply edits a positional block ({"name": "rope", ...}) in place.
func (f *Flags) Apply(pe map[string]any) error {
	if !f.Given() {
		return nil
	}
	if name, _ := pe["name"].(string); name != "rope" {
		return fmt.Errorf("the --rope-*, --yarn-* and --grp-attn-* flags need a model with the rope scheme; this one uses %q", name)
	}
	if err := f.applyScaling(pe); err != nil {
		return err
	}
	return f.applySelfExtend(pe)
}

// applySelfExtend writes the self_extend block from --grp-attn-n and --grp-attn-w.
func (f *Flags) applySelfExtend(pe map[string]any) error {
	switch {
	case f.GroupN < 0:
		return fmt.Errorf("--grp-attn-n must be >= 1, got %d", f.GroupN)
	case f.GroupW < 0:
		return fmt.Errorf("--grp-attn-w must be >= 1, got %d", f.GroupW)
	case f.GroupN <= 1 && f.GroupW > 0:
		return fmt.Errorf("--grp-attn-w needs --grp-attn-n G > 1 (the group size; 1 is off)")
	case f.GroupN <= 1:
		return nil
	}
	w := f.GroupW
	if w == 0 {
		w = 512 // llama.cpp's default
	}
	pe["self_extend"] = map[string]any{"group": f.GroupN, "window": w}
	return nil
}

// applyScaling writes the rope_scaling block and the base from the --rope-* and --yarn-* flags.
func (f *Flags) applyScaling(pe map[string]any) error {
	s, err := f.factor()
	if err != nil {
		return err
	}
	typ := f.Scaling
	if typ != "" && !slices.Contains(Types, typ) {
		return fmt.Errorf("--rope-scaling %q is not a scaling type (valid: %s)", typ, strings.Join(Types, ", "))
	}
	if typ == "" && s > 0 {
		typ = "linear"
	}
	switch {
	case f.FreqBase < 0 || (f.FreqBase > 0 && f.FreqBase <= 1):
		return fmt.Errorf("--rope-freq-base must be > 1, got %g", f.FreqBase)
	case f.OrigCtx < 0:
		return fmt.Errorf("--yarn-orig-ctx must be >= 1, got %d", f.OrigCtx)
	case f.AttnMult < 0:
		return fmt.Errorf("--yarn-attn-factor must be > 0, got %g", f.AttnMult)
	case typ != "" && typ != "none" && s == 0:
		return fmt.Errorf("--rope-scaling %s needs --rope-scale S (or --rope-freq-scale 1/S)", typ)
	}
	if f.FreqBase > 0 {
		pe["base"] = f.FreqBase
	}
	switch typ {
	case "":
		if f.OrigCtx > 0 || f.BetaFast > 0 || f.BetaSlow > 0 || f.AttnMult > 0 {
			return fmt.Errorf("the --yarn-* flags need --rope-scaling yarn (or dynamic) and --rope-scale S")
		}
		return nil
	case "none":
		delete(pe, "rope_scaling")
		return nil
	}
	block := map[string]any{"rope_type": typ, "factor": s}
	if f.OrigCtx > 0 {
		block["original_max_position_embeddings"] = f.OrigCtx
	}
	if typ == "yarn" {
		if f.BetaFast > 0 {
			block["beta_fast"] = f.BetaFast
		}
		if f.BetaSlow > 0 {
			block["beta_slow"] = f.BetaSlow
		}
		if f.AttnMult > 0 {
			// llama.cpp multiplies its YaRN magnitude by attn_factor; HF's attention_factor
			// replaces it, so the product is what goes into the block.
			block["attention_factor"] = f.AttnMult * positional.YaRNAttentionFactor(s)
		}
	} else if f.BetaFast > 0 || f.BetaSlow > 0 || f.AttnMult > 0 {
		return fmt.Errorf("--yarn-beta-fast, --yarn-beta-slow and --yarn-attn-factor need --rope-scaling yarn")
	}
	pe["rope_scaling"] = block
	return nil
}

// Edit is Apply as a models.Edit, for engine.Load.
func (f *Flags) Edit() models.Edit {
	return func(c *models.Config) error {
		if c.Positional == nil {
			c.Positional = map[string]any{"name": "none"}
		}
		return f.Apply(c.Positional)
	}
}

// Describe is a short label of the setting, for logs and result rows ("" when no flag is set).
func (f *Flags) Describe() string {
	if !f.Given() {
		return ""
	}
	pe := map[string]any{"name": "rope"}
	if err := f.Apply(pe); err != nil {
		return "invalid"
	}
	var parts []string
	if b, ok := pe["base"]; ok {
		parts = append(parts, fmt.Sprintf("base %v", b))
	}
	if blk, ok := pe["rope_scaling"].(map[string]any); ok {
		parts = append(parts, fmt.Sprintf("%v x%v", blk["rope_type"], blk["factor"]))
	}
	if blk, ok := pe["self_extend"].(map[string]any); ok {
		parts = append(parts, fmt.Sprintf("self-extend G=%v W=%v", blk["group"], blk["window"]))
	}
	return strings.Join(parts, ", ")
}
