package recipe

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/posformer/posformer/engine/train/tasks"
)

// Version 3 keeps v2's models (4-layer, width 128, about 1.05 M parameters; L = 64 tokens for
// the synthetic tasks, 128 bytes for lm and mlm) and changes what a reviewer of v2 found to rest
// on the design rather than on the schemes:
//
//   - settings that depend on the training length are scaled to L, each by its paper's rule
//     (SchemeArgs), the v2 values kept as labelled ablations;
//   - the plateau rule reads a validation text, the tables a 256 KiB test text of 50 or more
//     documents, disjoint from it and from the training text (corpus.LoadHeldOut);
//   - every scheme gets its learning rate from a sweep on one seed (LRs; lm's choice serves mlm,
//     copy's the other synthetic tasks), and every task the same plateau guard (no plateau
//     before half the cap);
//   - controls: a fine-tune at 4L without interpolation beside PI's, YaRN with and without
//     its short fine-tune, BOS-token rows for NoPE on every task and for Kazemnejad et al.'s
//     schemes on copy and reverse;
//   - more seeds where v2's rows were inconclusive (SeedsFor);
//   - the newer methods: CoPE, DAPE (on ALiBi, KERPLE and FIRE), p-RoPE, SSMax, PoSE.
var V3 = Recipe{
	Name: "v3",
	Schemes: []string{"none", "sinusoidal", "learned", "multiplicative", "floater", "rope", "xpos", "alibi", "kerple", "fire", "dape",
		"t5", "shaw", "xl", "deberta", "cope"},
	Shape: V2.Shape,
	Optim: []string{"-batch", "32", "-lr", "0.001", "-warmup", "200", "-wd", "0.01"},
	// An evaluation every 100 steps on 256 windows at L spread over the whole validation text
	// (32 KiB of lm's 92, from every document); a plateau is five of them (500 steps) without a
	// 1% improvement.
	Stop: []string{"-plateau", "5", "-plateau-tol", "0.01", "-eval-every", "100", "-save-every", "200", "-eval-windows", "256"},
	// The guard v2 added to mlm after its encoders stopped on their early plateau (bytes'
	// frequencies learned, positions not yet used) now holds for every task: no plateau before
	// half the cap. mqar's cap is 8,000 steps: in v2, 12 of 14 schemes sat at the
	// position-blind ~2 nats at 3,000, and RoPE given 8,000 left it by step 3,700. A scheme
	// still there at the cap is reported as "did not learn", not ranked.
	TaskStop: map[string][]string{
		tasks.LM: {"-plateau-min", "2500"}, tasks.MLM: {"-plateau-min", "2500"},
		tasks.Copy: {"-plateau-min", "1500"}, tasks.Reverse: {"-plateau-min", "1500"}, tasks.Passkey: {"-plateau-min", "1500"},
		tasks.MQAR: {"-plateau-min", "4000"},
	},
	TrainLen:     V2.TrainLen,
	StepCap:      map[string]int{tasks.LM: 5000, tasks.MLM: 5000, tasks.Copy: 3000, tasks.Reverse: 3000, tasks.Passkey: 3000, tasks.MQAR: 8000},
	Batch:        32,
	Seeds:        3,
	Factors:      V2.Factors,
	BiasFactors:  V2.BiasFactors,
	BiasSchemes:  []string{"alibi", "kerple", "t5", "dape"},
	RandPosTasks: V2.RandPosTasks, RandPosSchemes: V2.RandPosSchemes, RandPosFactor: V2.RandPosFactor,
	PITasks: V2.PITasks, PIFactor: V2.PIFactor, PISteps: V2.PISteps, PIBatch: V2.PIBatch, PILR: V2.PILR,
	RopeTypes: V2.RopeTypes, RopeFactors: V2.RopeFactors, RopeTasks: V2.RopeTasks,
	// Every model trains in float32 (v2 trained lm, mlm, passkey and mqar with bfloat16
	// products): one precision for every task, no caveat in any comparison; and the bf16 path
	// pays only on CPUs with AVX512_BF16: on an AVX2 CPU (the Zen 3 machine of SPEED.md) the
	// lm step in passes of 4 on one core took 592-610 ms (alibi) and 655-676 (rope) in float32
	// against 709-725 and 692-765 with bf16 products.
	TrainBackend: nil,
	// Float32 steps on one core with a second cell training beside it (the grid's two at a time
	// on two cores): lm's rope cells 0.49 s a step in their thread's CPU time; alone, rope's
	// step (cmd/train, 40 steps) takes 0.40 s for lm and mlm, 0.19 for the tasks at L = 64, so
	// those are 0.19 × 0.49/0.40. The guard makes every model train at least half its cap.
	StepSeconds: map[string]float64{tasks.LM: 0.49, tasks.MLM: 0.49, tasks.Copy: 0.23, tasks.Reverse: 0.23, tasks.Passkey: 0.23, tasks.MQAR: 0.23},
	SchemeCost:  map[string]float64{"xl": 1.3, "shaw": 1.2, "deberta": 1.2, "cope": 1.3, "dape": 1.2},
	EvalSeconds: map[string]float64{tasks.LM: 300, tasks.MLM: 200, tasks.Copy: 20, tasks.Reverse: 20, tasks.Passkey: 60, tasks.MQAR: 40},
	// A RoPE language model's rows beyond the plain ones (Self-Extend, five scaling types at two
	// factors, YaRN's v2 ramp at two), measured on one core: 2,100 s, of which dynamic NTK's
	// per-query frequencies take 1,300.
	EvalSecondsPerRopeRows: 2100,
	// Nothing ships while the grid runs: weights/bench keeps the v2 models its report reads
	// until v3's are complete.
	ShipTasks: nil,
	ShipSeed:  1,

	SchemeArgs: func(task, scheme string, L int) []string {
		switch scheme {
		case "fire":
			// Li et al. 2023 start the threshold at 512 for a training length of 2,048: L/4.
			return []string{"-pe", "init_l=" + strconv.Itoa(L/4)}
		case "t5":
			// Raffel et al. 2020: max_distance 128 for inputs of 512, L/4. A causal decoder has 32
			// buckets in one direction, the first 16 exact: at L = 64, L/4 = 16 would leave no
			// logarithmic buckets, so the synthetic tasks take L/2 = 32, the smallest that keeps
			// them.
			d := L / 4
			if tasks.Kind(task) != "encoder" && d <= 16 {
				d = L / 2
			}
			return []string{"-pe", "max_distance=" + strconv.Itoa(d)}
		}
		return nil
	},
	Variants: []Variant{
		// Kazemnejad et al. 2023 train every task with a BOS token, which NoPE's recovery of
		// positions relies on: NoPE both ways on every task, and the paper's other schemes with
		// it on copy and reverse, the tasks its ranking is read on.
		{Label: "BOS", Tag: "bos", Schemes: []string{"none"}, Args: []string{"-bos"}},
		{Label: "BOS", Tag: "bos", Schemes: []string{"sinusoidal", "learned", "rope", "alibi", "t5"}, Tasks: []string{tasks.Copy, tasks.Reverse}, Args: []string{"-bos"}},
		// p-RoPE (Barbero et al. 2024): the lowest-frequency quarter of the pairs stop rotating.
		{Label: "p=0.75", Tag: "p075", Schemes: []string{"rope"}, Args: []string{"-pe", "p=0.75"}},
		// SSMax (Nakanishi 2025) on RoPE, as the paper trains it, and on NoPE.
		{Label: "SSMax", Tag: "ssmax", Schemes: []string{"rope", "none"}, Args: []string{"-pe", "ssmax=true"}},
		// DAPE (Zheng et al. 2024) adapts ALiBi (the scheme's default), KERPLE and FIRE.
		{Label: "kerple", Tag: "kerple", Schemes: []string{"dape"}, Args: []string{"-pe", "bias=kerple"}},
		{Label: "fire", Tag: "fire", Schemes: []string{"dape"}, Args: []string{"-pe", "bias=fire"}, FIREScaled: true},
		// PoSE (Zhu et al. 2023): trained at L, positions skipping up to 4L, for the tasks PI is
		// read on.
		{Label: "PoSE 4L", Tag: "pose4", Schemes: []string{"rope"}, Tasks: []string{tasks.LM, tasks.Passkey}, PoSEFactor: 4},
		// v2's settings, kept where they teach something: FIRE's threshold at 512 = 4L and T5's
		// max_distance at 128 = L on lm.
		{Label: "init_l=512", Tag: "initl512", Schemes: []string{"fire"}, Tasks: []string{tasks.LM}, Args: []string{"-pe", "init_l=512"}, Replaces: true},
		{Label: "max_distance=128", Tag: "maxd128", Schemes: []string{"t5"}, Tasks: []string{tasks.LM}, Args: []string{"-pe", "max_distance=128"}, Replaces: true},
	},
	FineTunes: []FineTune{
		// Chen et al. 2023: 1,000 steps with linear interpolation, and its control, the same
		// fine-tune at 4L without interpolation (same steps, data and learning rate).
		{Label: PIVariant(4), Tag: "pi4", Steps: 1000, Args: []string{"--rope-scaling", "linear", "--rope-scale", "4"}},
		{Label: "4L ft", Tag: "ft4", Steps: 1000},
		// Peng et al. 2023: YaRN needs a tenth of PI's fine-tune (400 steps there); its ramp as
		// YaRNBeta sets it for this head size.
		{Label: "yarn s=4 ft", Tag: "yarn4", Steps: 400, Args: []string{"--rope-scaling", "yarn", "--rope-scale", "4", "--yarn-beta-fast", strconv.FormatFloat(YaRNBetaFast, 'g', -1, 64), "--yarn-beta-slow", strconv.FormatFloat(YaRNBetaSlow, 'g', -1, 64)}},
	},
	// StreamingLLM on lm, scored at 16L and 32L, for the schemes whose cached keys can move.
	StreamSchemes: []string{"rope", "alibi", "none"},
	StreamSinks:   4,
	StreamFactor:  16,
	LRs:           []float64{5e-4, 1e-3, 2e-3},
	LRSweeps:      map[string]string{tasks.LM: tasks.LM, tasks.MLM: tasks.LM, tasks.Copy: tasks.Copy, tasks.Reverse: tasks.Copy, tasks.Passkey: tasks.Copy, tasks.MQAR: tasks.Copy},
	// The rows v2 left inconclusive, with the seeds its spread asks for (5): NoPE and learned
	// on copy and reverse, randomized positions and their base rows, and PI against RoPE on
	// passkey (with PI's control and YaRN's fine-tune beside them).
	SeedsFor: map[string]int{
		"copy/none": 5, "copy/learned": 5, "reverse/none": 5, "reverse/learned": 5,
		"copy/sinusoidal": 5, "copy/rope": 5, "reverse/sinusoidal": 5, "reverse/rope": 5,
		"copy/sinusoidal + randpos": 5, "copy/rope + randpos": 5, "reverse/sinusoidal + randpos": 5, "reverse/rope + randpos": 5,
		"passkey/rope": 5,
	},
	// Papers first: the rows "against the papers" reads fill before the rest widens the tables.
	First: map[string][]string{
		tasks.LM:      {"none", "sinusoidal", "rope", "alibi", "kerple", "fire", "t5"},
		tasks.Copy:    {"none", "sinusoidal", "learned", "rope", "alibi", "t5"},
		tasks.Reverse: {"none", "sinusoidal", "learned", "rope", "alibi", "t5"},
		tasks.Passkey: {"rope"},
	},
}

// YaRNBeta is the v3 ramp of YaRN (Peng et al. 2023) for head dim 32 and L = 128: the pairs that
// turn at least beta_fast times within L keep their frequency, those turning fewer than
// beta_slow times are fully interpolated. LLaMA's β = 32 leaves a third of its 64 pairs alone
// at head dim 128 and 4,096 tokens; here no pair turns 32 times within L (the fastest turns
// 20 times), so 32 interpolates every pair. β = 2 leaves the same third alone (5 of 16).
const YaRNBetaFast, YaRNBetaSlow = 2.0, 1.0

// Labels of evaluation-only rows added in version 3.
const (
	StreamVariant     = "StreamingLLM"
	SelfExtendVariant = "self-extend W=L/2"
)

// Variant is a trained row beside a scheme's own: other options or training flags.
type Variant struct {
	Label   string   // the tables' label ("BOS", "p=0.75")
	Tag     string   // in the folder name: <scheme>-<tag>[-seedN]
	Schemes []string // the schemes it applies to
	Tasks   []string // nil: every task the scheme applies to
	Args    []string // more cmd/train flags
	// PoSEFactor > 0 trains with -pose PoSEFactor·L.
	PoSEFactor int
	// FIREScaled adds FIRE's threshold at L/4 (a DAPE over FIRE).
	FIREScaled bool
	// Replaces drops the scheme's SchemeArgs (an ablation of them).
	Replaces bool
}

func (v Variant) applies(task, scheme string) bool {
	return slices.Contains(v.Schemes, scheme) && (v.Tasks == nil || slices.Contains(v.Tasks, task)) && Applies(task, scheme)
}

// FineTune is a RoPE model of PITasks trained further at PIFactor·L from its base checkpoint.
type FineTune struct {
	Label, Tag string
	Steps      int
	Args       []string
}

// SweepVariant labels a learning-rate sweep's model at another rate than the recipe's.
func SweepVariant(lr float64) string { return "lr=" + strconv.FormatFloat(lr, 'g', -1, 64) }

// DefaultLR is the learning rate of the recipe's Optim (-lr).
func (r Recipe) DefaultLR() float64 {
	i := slices.Index(r.Optim, "-lr")
	lr, _ := strconv.ParseFloat(r.Optim[i+1], 64)
	return lr
}

// SweepModels are the learning-rate sweep's models of a (sweep task, scheme) other than the one
// at the default rate, which is the plain model of seed 1.
func (r Recipe) sweepModels(weights, task, scheme string) []Model {
	var out []Model
	for _, lr := range r.LRs {
		if lr == r.DefaultLR() {
			continue
		}
		tag := "lr" + strconv.FormatFloat(lr, 'g', -1, 64)
		m := r.model(weights, task, scheme, SweepVariant(lr), tag, 1, r.trainArgs(task, scheme, nil))
		m.Args = withLR(m.Args, lr)
		out = append(out, m)
	}
	return out
}

// SweepIDs are the cells whose validation losses choose a scheme's learning rate for a task.
func (r Recipe) SweepIDs(task, scheme string) []string {
	st := r.LRSweeps[task]
	if st == "" || len(r.LRs) == 0 {
		return nil
	}
	var ids []string
	for _, lr := range r.LRs {
		name := ModelName(scheme, "", 1)
		if lr != r.DefaultLR() {
			name = ModelName(scheme, "lr"+strconv.FormatFloat(lr, 'g', -1, 64), 1)
		}
		ids = append(ids, st+"/"+name)
	}
	return ids
}

// withoutFlag drops a flag and its value.
func withoutFlag(args []string, flag string) []string {
	out := slices.Clone(args)
	if i := slices.Index(out, flag); i >= 0 {
		out = slices.Delete(out, i, i+2)
	}
	return out
}

// withLR replaces -lr's value.
func withLR(args []string, lr float64) []string {
	out := slices.Clone(args)
	if i := slices.Index(out, "-lr"); i >= 0 {
		out[i+1] = strconv.FormatFloat(lr, 'g', -1, 64)
	}
	return out
}

// trainArgs are the scheme's flags for a task: its settings scaled to L (unless an ablation
// replaces them), and the variant's own.
func (r Recipe) trainArgs(task, scheme string, v *Variant) []string {
	L := r.TrainLen[task]
	var args []string
	if r.SchemeArgs != nil && (v == nil || !v.Replaces) {
		args = append(args, r.SchemeArgs(task, scheme, L)...)
	}
	if v != nil {
		args = append(args, v.Args...)
		if v.FIREScaled {
			args = append(args, r.SchemeArgs(task, "fire", L)...)
		}
		if v.PoSEFactor > 0 {
			args = append(args, "-pose", strconv.Itoa(v.PoSEFactor*L))
		}
	}
	return args
}

// seedsOf is the seeds of a row: SeedsFor's, or the recipe's (or the caller's, when it asks for
// fewer).
func (r Recipe) seedsOf(task, label string, seeds int) int {
	if n := r.SeedsFor[task+"/"+label]; n > 0 && seeds == r.Seeds {
		return n
	}
	return seeds
}

// modelsV3 lists a sweep recipe's cells: for every (task, scheme) the sweep's extra models,
// then every seed of the scheme, its variants and fine-tunes at the chosen rate. A cell whose
// rate is not chosen yet waits (Waiting) on its sweep's cells (After).
func (r Recipe) modelsV3(weights string, taskList, schemes []string, seeds int) []Model {
	var out []Model
	for seed := 1; seed <= slices.Max(append([]int{seeds}, slices.Collect(maps.Values(r.SeedsFor))...)); seed++ {
		for _, task := range taskList {
			L := r.TrainLen[task]
			for _, scheme := range schemes {
				if !Applies(task, scheme) {
					continue
				}
				lr, chosen := r.lrFor(task, scheme)
				after := r.SweepIDs(task, scheme)
				settle := func(m Model) Model {
					m.After = after
					if !chosen {
						m.Waiting = "the learning-rate sweep of " + scheme + " on " + r.LRSweeps[task]
					}
					m.Args = withLR(m.Args, lr)
					return m
				}
				if seed == 1 && r.LRSweeps[task] == task {
					out = append(out, r.sweepModels(weights, task, scheme)...)
				}
				var base Model
				if seed <= r.seedsOf(task, scheme, seeds) {
					base = r.model(weights, task, scheme, "", "", seed, r.trainArgs(task, scheme, nil))
					if r.LRSweeps[task] != task || seed > 1 {
						base = settle(base)
					}
					out = append(out, base)
				}
				if slices.Contains(r.RandPosTasks, task) && slices.Contains(r.RandPosSchemes, scheme) && seed <= r.seedsOf(task, scheme+" + "+RandPosVariant, seeds) {
					out = append(out, settle(r.model(weights, task, scheme, RandPosVariant, "randpos", seed,
						append(r.trainArgs(task, scheme, nil), "-random-positions", strconv.Itoa(r.RandPosFactor*L)))))
				}
				for i := range r.Variants {
					v := &r.Variants[i]
					if v.applies(task, scheme) && seed <= r.seedsOf(task, scheme+" + "+v.Label, seeds) {
						out = append(out, settle(r.model(weights, task, scheme, v.Label, v.Tag, seed, r.trainArgs(task, scheme, v))))
					}
				}
				if scheme == "rope" && slices.Contains(r.PITasks, task) && base.Name != "" {
					from := base
					if seed == 1 && r.LRSweeps[task] == task {
						// The seed-1 model the tables read is the sweep's at the chosen rate.
						from = settle(from)
						if lr != r.DefaultLR() {
							from.Name = ModelName(scheme, "lr"+strconv.FormatFloat(lr, 'g', -1, 64), 1)
							from.Dir = filepath.Join(weights, task, from.Name)
						}
					}
					for _, ft := range r.FineTunes {
						out = append(out, r.fineTune(weights, task, scheme, from, ft, seed))
					}
				}
			}
		}
	}
	return out
}

// lrFor is the rate a scheme trains at on a task: the sweep's choice (Choose), or the default
// while the sweep is not done (the cell then waits).
func (r Recipe) lrFor(task, scheme string) (float64, bool) {
	if r.LRSweeps[task] == "" || len(r.LRs) == 0 {
		return r.DefaultLR(), true
	}
	if r.Choose != nil {
		if lr, ok := r.Choose(r.LRSweeps[task], scheme); ok {
			return lr, true
		}
	}
	return r.DefaultLR(), false
}

// fineTune is a fine-tune of base at PIFactor·L (PI, its control, YaRN's).
func (r Recipe) fineTune(weights, task, scheme string, base Model, ft FineTune, seed int) Model {
	L := r.TrainLen[task]
	m := Model{Task: task, Scheme: scheme, Variant: ft.Label, Seed: seed, Init: base.Name, Steps: ft.Steps, After: base.After, Waiting: base.Waiting}
	m.Name = ModelName(scheme, ft.Tag, seed)
	m.Dir = filepath.Join(weights, task, m.Name)
	m.Args = []string{"-task", task, "-init", base.Dir}
	if b := r.TrainBackend[task]; b != "" {
		m.Args = append(m.Args, "--backend", b)
	}
	m.Args = append(m.Args, ft.Args...)
	m.Args = append(m.Args, "-seq", strconv.Itoa(r.PIFactor*L), "-batch", strconv.Itoa(r.PIBatch), "-lr", strconv.FormatFloat(r.PILR, 'g', -1, 64),
		"-warmup", "20", "-steps", strconv.Itoa(ft.Steps), "-eval-every", "50", "-save-every", "50", "-eval-windows", "64",
		"-seed", strconv.Itoa(seed), "-o", m.Dir)
	m.TrainSeconds = float64(ft.Steps) * r.stepSeconds(task, scheme) * float64(r.PIFactor*r.PIBatch) / float64(r.Batch) * 1.3
	m.EvalSeconds = r.EvalSeconds[task]
	return m
}

// Describe3 summarizes a v3 recipe in one paragraph, for RESULTS.md and -plan.
func (r Recipe) describe3() string {
	return fmt.Sprintf("Recipe %s: every model `%s %s %s` (about 1.05 M parameters), L = %d tokens for the synthetic tasks and %d bytes for lm and mlm; "+
		"learning rate per scheme from a sweep over %v on seed 1 (lm's choice for lm and mlm, copy's for the synthetic tasks), chosen by validation loss; "+
		"trained until the validation loss at L has not improved by 1%% for five evaluations (one per 100 steps, never before half the cap), then cooled down "+
		"(caps: %d steps for lm and mlm, %d for copy, reverse and passkey, %d for mqar); %d seeds per row (5 on the rows v2 left open); "+
		"evaluated on the test text at %s L (and %s L for %s on lm); %s.",
		r.Name, strings.Join(r.Shape, " "), strings.Join(withoutFlag(r.Optim, "-lr"), " "), strings.Join(r.Stop[:4], " "), r.TrainLen[tasks.Copy], r.TrainLen[tasks.LM], r.LRs,
		r.StepCap[tasks.LM], r.StepCap[tasks.Copy], r.StepCap[tasks.MQAR], r.Seeds, joinInts(r.Factors), joinInts(r.BiasFactors), strings.Join(r.BiasSchemes, " "), r.precision())
}

// precision says in which precision the models train.
func (r Recipe) precision() string {
	if ts := r.bf16Tasks(); ts != "" {
		return ts + " train with bfloat16 matrix products (float32 sums)"
	}
	return "every model trains in float32"
}

// VariantOf is the label of the recipe's variant, fine-tune or learning-rate sweep model whose
// folder name is name (ModelName of the scheme, the tag and the seed), "" if none is.
func (r Recipe) VariantOf(scheme, name string, seed int) string {
	tagged := func(tag string) bool { return name == ModelName(scheme, tag, seed) }
	for _, v := range r.Variants {
		if slices.Contains(v.Schemes, scheme) && tagged(v.Tag) {
			return v.Label
		}
	}
	for _, ft := range r.FineTunes {
		if tagged(ft.Tag) {
			return ft.Label
		}
	}
	if tagged("randpos") {
		return RandPosVariant
	}
	for _, lr := range r.LRs {
		if tagged("lr" + strconv.FormatFloat(lr, 'g', -1, 64)) {
			return SweepVariant(lr)
		}
	}
	return ""
}
