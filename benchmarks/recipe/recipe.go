// Package recipe is the benchmark's training recipe: which models the grid holds (task ×
// scheme × seed, plus the variants that test published claims), the one cmd/train command that
// trains each of them (identical but for the scheme, the seed and the variant's own flag), and
// what a finished checkpoint records about its training (train.json).
//
// Version 2: 4-layer decoders and encoders of width 128 (about 1.05 M parameters),
// L = 64 tokens for the synthetic tasks and 128 bytes for lm and mlm, trained until the held-out
// loss at L flattens (cmd/train -plateau, with a step cap), three seeds per (task, scheme).
package recipe

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/posformer/posformer/engine/train"
	"github.com/posformer/posformer/engine/train/tasks"
	"github.com/posformer/posformer/models"
	"github.com/posformer/posformer/positional"
)

// Recipe is everything the grid's training shares.
type Recipe struct {
	Name string
	// Shape, Optim and Stop are cmd/train flags every model of the grid gets; TaskStop, more
	// stopping flags for every model of a task.
	Shape, Optim, Stop []string
	TaskStop           map[string][]string
	TrainLen           map[string]int // L per task, in tokens the model reads
	StepCap            map[string]int // -steps: the cap on a plateau run
	Batch              int            // sequences per step (also in Optim)
	Seeds              int
	// Schemes are the positional schemes the grid trains (a scheme registered later is not part
	// of a finished recipe, but runs when named with -scheme).
	Schemes []string
	// Factors are the evaluation lengths in units of L; BiasFactors are added for BiasSchemes on
	// lm (ALiBi's claim is about long inputs, and these schemes are cheap to run there).
	Factors, BiasFactors []int
	BiasSchemes          []string
	// RandPos trains RandPosSchemes on RandPosTasks again with randomized positions drawn from
	// [0, RandPosFactor·L) (Ruoss et al. 2023).
	RandPosTasks, RandPosSchemes []string
	RandPosFactor                int
	// PI fine-tunes each RoPE model of PITasks at PIFactor·L with linear position interpolation
	// for PISteps steps, as Chen et al. 2023 do (1000), PIBatch sequences of PIFactor·L tokens
	// (the pretraining tokens per step). 300 steps (a tenth of pretraining) were tried first on
	// passkey, seed 1: the held-out loss at 4L went 2.11 → 1.31 nats (the base model: 0.001 at L)
	// and was still falling as the learning rate decayed; exact match 0.00 at 4L. A fine-tune
	// that short tests the budget, not the method.
	PITasks           []string
	PIFactor, PISteps int
	PIBatch           int
	PILR              float64
	RopeTypes         []string  // RoPE context-extension rows, evaluated without retraining
	RopeFactors       []float64 // at these fixed factors s
	RopeTasks         []string
	// TrainBackend is cmd/train's --backend per task where it is not the default: the same for
	// every scheme and seed of a task, so it never separates two models that are compared.
	TrainBackend           map[string]string
	StepSeconds            map[string]float64 // seconds per step on one core, rope (the pilot; for the ETA)
	SchemeCost             map[string]float64 // a step's cost relative to rope (v1 wall times)
	EvalSeconds            map[string]float64 // evaluating one model, on one core (estimate)
	EvalSecondsPerRopeRows float64            // the RoPE-scaling rows of one model
	// ShipTasks at seed ShipSeed are the checkpoints shipped in weights/bench (Ships).
	ShipTasks []string
	ShipSeed  int

	// From version 3 (v3.go). SchemeArgs are a scheme's settings scaled to the task's L.
	SchemeArgs func(task, scheme string, L int) []string
	Variants   []Variant
	// FineTunes replace the PI fine-tune of PITasks' RoPE models: each from the same base.
	FineTunes []FineTune
	// LRs are the learning rates swept on seed 1 of each scheme on the tasks LRSweeps maps to
	// themselves; LRSweeps[task] is the task whose sweep chooses task's rate.
	LRs      []float64
	LRSweeps map[string]string
	// Choose is the sweep's choice (nil or !ok: not made yet), set by the grid from the sweep's
	// finished models.
	Choose func(task, scheme string) (lr float64, ok bool)
	// SeedsFor overrides Seeds for a row ("task/label", label as report.Result.Label).
	SeedsFor map[string]int
	// StreamSchemes are scored on lm through StreamingLLM's bounded cache with StreamSinks sinks,
	// from StreamFactor·L on (evaluation only).
	StreamSchemes             []string
	StreamSinks, StreamFactor int
	// First are the schemes each task runs first (the papers' rows), before the rest.
	First map[string][]string
}

// V2 is the second benchmark's recipe: six tasks, fourteen schemes, three seeds.
var V2 = Recipe{
	Name:    "v2",
	Schemes: []string{"none", "sinusoidal", "learned", "multiplicative", "floater", "rope", "xpos", "alibi", "kerple", "fire", "t5", "shaw", "xl", "deberta"},
	Shape:   []string{"-dim", "128", "-layers", "4", "-heads", "4", "-kv-heads", "4", "-hidden", "512", "-ctx", "4096"},
	Optim:   []string{"-batch", "32", "-lr", "1e-3", "-warmup", "200", "-wd", "0.01"},
	// An evaluation every 100 steps on 64 held-out sequences at L; a plateau is five of them
	// (500 steps) without a 1% improvement.
	Stop: []string{"-plateau", "5", "-plateau-tol", "0.01", "-eval-every", "100", "-save-every", "200", "-eval-windows", "64"},
	// mlm's encoders first learn the bytes' frequencies in their context, as a position-blind
	// model does (2.93 nats by step 600), and only later use positions: in the grid's first mlm
	// cells FLOATER left that plateau at step 1,000, sinusoidal at 500, and learned
	// and multiplicative were stopped on it at 960 and 1,200, no better than NoPE. No plateau
	// counts before half the cap.
	TaskStop: map[string][]string{tasks.MLM: {"-plateau-min", "2500"}},
	TrainLen: map[string]int{tasks.LM: 128, tasks.MLM: 128, tasks.Copy: 64, tasks.Reverse: 64, tasks.Passkey: 64, tasks.MQAR: 64},
	// The caps: lm and mlm at 5,000 steps of 32×128 bytes, 20 M tokens, about 20 per parameter
	// (Hoffmann et al. 2022's compute-optimal ratio); the synthetic tasks at 3,000 steps (the
	// pilot's copy model reached 0.12 nats in 300). mqar's cap was kept after seed 1, where 12 of
	// 14 schemes sat near 2 nats at 3,000 steps: RoPE, seed 1, given a cap of 8,000 met the
	// plateau rule at step 3,700 and cooled down to 1.77 nats by 4,440 (1.83 at the 3,000 cap);
	// at -lr 3e-3 it met the rule at 1,300 and ended at 2.56 nats. A larger cap buys those
	// schemes little under the same stopping rule.
	StepCap: map[string]int{tasks.LM: 5000, tasks.MLM: 5000, tasks.Copy: 3000, tasks.Reverse: 3000, tasks.Passkey: 3000, tasks.MQAR: 3000},
	Batch:   32,
	Seeds:   3,
	Factors: []int{1, 2, 4, 8, 16},
	// FIRE is a bias scheme too, but its MLP holds [seq, keys, 32] floats per layer: 2 GiB at
	// 4,096 tokens, more than a shared 2-core machine should spend on one row.
	BiasFactors:    []int{32},
	BiasSchemes:    []string{"alibi", "kerple", "t5"},
	RandPosTasks:   []string{tasks.Copy, tasks.Reverse},
	RandPosSchemes: []string{"sinusoidal", "rope"},
	RandPosFactor:  16,
	PITasks:        []string{tasks.LM, tasks.Passkey},
	PIFactor:       4,
	PISteps:        1000,
	PIBatch:        8,
	PILR:           2e-4,
	RopeTypes:      []string{"linear", "ntk", "dynamic", "yarn", "llama3"},
	RopeFactors:    []float64{4, 16},
	RopeTasks:      []string{tasks.LM, tasks.Passkey},
	// lm, mlm, passkey and mqar (80% of the grid's work) train with bfloat16 matrix products,
	// float32 sums and everything else float32 (engine/cpu's bf16dot, AVX512_BF16: a step
	// 1.3-1.4x faster; 300 steps of lm from the same seed reached held-out 1.966 nats against
	// 1.944 in float32, 400 steps of passkey 0.118 against 0.110 and of mqar 2.780 against 2.744,
	// SPEED.md and benchmarks/README.md); they are evaluated in float32 like every model. Copy
	// and reverse, begun in float32 before the option existed, stay float32: every model of a
	// task has the same precision.
	TrainBackend: map[string]string{tasks.LM: "cpu:bf16dot=true", tasks.MLM: "cpu:bf16dot=true", tasks.Passkey: "cpu:bf16dot=true", tasks.MQAR: "cpu:bf16dot=true"},
	// Measured by the pilot (benchmarks/README.md): one core per model, two models at once, batch
	// 32, evaluations and checkpoints included: copy (rope) 0.18 s a step, lm (alibi, none) 0.39
	// in float32. lm with bf16 products: BenchmarkTrainStepSchemesLM's steps of none and rope take
	// 0.32-0.33 s on one core, the grid's evaluation every 100 steps adds to that, taken as 0.36;
	// mlm is taken equal to lm (same shape and length), the other synthetic tasks to copy. Passkey and mqar with bf16 products: the first
	// four passkey models of the grid took 0.175-0.24 s a step (train.json's wall over steps,
	// two at a time, evaluations every 100 steps included), taken as 0.18; -within relies on
	// these not being optimistic.
	StepSeconds: map[string]float64{tasks.LM: 0.36, tasks.MLM: 0.36, tasks.Copy: 0.19, tasks.Reverse: 0.19, tasks.Passkey: 0.18, tasks.MQAR: 0.18},
	// A step's time relative to rope's at the v2 shape (BenchmarkTrainStepSchemes, bf16
	// products, one core, the grid running beside it: ±10%), since the trainer shares one row of
	// positions across the batch (FIRE's MLP over every (query, key) pair was 1.9x rope's step
	// before, FLOATER's ODE 1.25x); schemes not listed measured within noise of rope.
	SchemeCost: map[string]float64{"xl": 1.3, "shaw": 1.2, "deberta": 1.2},
	// The pilot: a copy model's evaluation 20 s, an lm model's 55 s (with its sliding rows and,
	// for alibi, 32L); passkey and mqar score more sequences at each length than copy.
	EvalSeconds: map[string]float64{tasks.LM: 55, tasks.MLM: 40, tasks.Copy: 20, tasks.Reverse: 20, tasks.Passkey: 40, tasks.MQAR: 40},
	// Ten rows (five types at two factors); dynamic NTK's per-query rotation dominates.
	EvalSecondsPerRopeRows: 300,
	// lm and passkey are the tasks with the RoPE-scaling rows, the ones a reader would re-run
	// with another scaling: their 30 models of seed 1 at float16 are about 63 MB.
	ShipTasks: []string{tasks.LM, tasks.Passkey},
	ShipSeed:  1,
}

// Applies reports whether a scheme can be trained for a task (xPos and CoPE are decoder-only).
func Applies(task, scheme string) bool {
	return !((scheme == "xpos" || scheme == "cope") && tasks.Kind(task) == models.Encoder)
}

// Model is one cell of the grid: a checkpoint to train (or fine-tune) and evaluate.
type Model struct {
	Task, Scheme string
	Variant      string // "" or the label of a trained variant ("randpos", "PI s=4 ft")
	Seed         int
	Name         string   // the checkpoint's folder: <scheme>[-<variant>][-seedN]
	Dir          string   // <weights>/<task>/<Name>
	Args         []string // cmd/train's arguments, -o Dir last
	Init         string   // the Name of the model this one starts from (-init), "" if none
	// After are the IDs of cells whose results set this one's command (a learning-rate sweep);
	// Waiting says why the command is not final yet ("" when it is).
	After        []string
	Waiting      string
	Steps        int     // the step cap, for the estimate
	TrainSeconds float64 // estimated training time on one core, at the cap (an upper bound)
	EvalSeconds  float64 // estimated evaluation time on one core
}

// Seconds is the model's estimated time on one core.
func (m Model) Seconds() float64 { return m.TrainSeconds + m.EvalSeconds }

// ID names a cell: <task>/<name>.
func (m Model) ID() string { return m.Task + "/" + m.Name }

// ModelName is the folder of a (scheme, variant tag, seed): seed 1 has no suffix, as in v1.
func ModelName(scheme, tag string, seed int) string {
	name := scheme
	if tag != "" {
		name += "-" + tag
	}
	if seed != 1 {
		name += "-seed" + strconv.Itoa(seed)
	}
	return name
}

// Variant labels, shared by the evaluation rows, the tables and the papers section.
const (
	RandPosVariant = "randpos"
	SlidingVariant = "sliding L"
	// FIRECapVariant is a FIRE model on lm evaluated with its normaliser's query position
	// capped at L (positional option norm_max): the same model up to L, and past it keys get
	// inputs above 1 instead of every key's input shrinking. It ablates the progressive
	// interpolation that Li et al. credit for FIRE's flat loss.
	FIRECapVariant = "normaliser at L"
)

// EvalOnly reports whether a variant is an evaluation of a trained model under an edit (a
// sliding window, a RoPE scaling, FIRE's capped normaliser) rather than a model trained apart.
func EvalOnly(variant string) bool {
	return variant == SlidingVariant || variant == FIRECapVariant || variant == StreamVariant || variant == SelfExtendVariant ||
		strings.Contains(variant, " s=") && !strings.HasSuffix(variant, " ft")
}

// PIVariant labels a RoPE model fine-tuned with linear interpolation by factor s.
func PIVariant(s int) string { return fmt.Sprintf("PI s=%d ft", s) }

// ScalingVariant labels a RoPE-scaling row at a fixed factor.
func ScalingVariant(typ string, s float64) string { return fmt.Sprintf("%s s=%g", typ, s) }

// Models lists the grid's cells for the chosen tasks and schemes, seeds 1..seeds (0: the
// recipe's), each model's -init base before it. Seed 1 of every (task, scheme) comes first,
// then seed 2, ...: a grid run in pieces over days has a whole table early, its intervals later.
func (r Recipe) Models(weights string, taskList, schemes []string, seeds int) []Model {
	if seeds <= 0 {
		seeds = r.Seeds
	}
	if len(r.LRs) > 0 {
		return r.modelsV3(weights, taskList, schemes, seeds)
	}
	var out []Model
	for seed := 1; seed <= seeds; seed++ {
		for _, task := range taskList {
			L := r.TrainLen[task]
			for _, scheme := range schemes {
				if !Applies(task, scheme) {
					continue
				}
				base := r.model(weights, task, scheme, "", "", seed, nil)
				out = append(out, base)
				if slices.Contains(r.RandPosTasks, task) && slices.Contains(r.RandPosSchemes, scheme) {
					out = append(out, r.model(weights, task, scheme, RandPosVariant, "randpos", seed,
						[]string{"-random-positions", strconv.Itoa(r.RandPosFactor * L)}))
				}
				if scheme == "rope" && slices.Contains(r.PITasks, task) {
					m := Model{Task: task, Scheme: scheme, Variant: PIVariant(r.PIFactor), Seed: seed, Init: base.Name, Steps: r.PISteps}
					m.Name = ModelName(scheme, fmt.Sprintf("pi%d", r.PIFactor), seed)
					m.Dir = filepath.Join(weights, task, m.Name)
					m.Args = []string{"-task", task, "-init", base.Dir, "--rope-scaling", "linear", "--rope-scale", strconv.Itoa(r.PIFactor),
						"-seq", strconv.Itoa(r.PIFactor * L), "-batch", strconv.Itoa(r.PIBatch), "-lr", strconv.FormatFloat(r.PILR, 'g', -1, 64),
						"-warmup", "20", "-steps", strconv.Itoa(r.PISteps), "-eval-every", "50", "-save-every", "50", "-eval-windows", "16",
						"-seed", strconv.Itoa(seed), "-o", m.Dir}
					if b := r.TrainBackend[task]; b != "" {
						m.Args = slices.Insert(m.Args, 2, "--backend", b)
					}
					// As many tokens per step as pretraining; attention over 4x longer rows costs more.
					m.TrainSeconds = float64(r.PISteps) * r.stepSeconds(task, scheme) * float64(r.PIFactor*r.PIBatch) / float64(r.Batch) * 1.3
					m.EvalSeconds = r.EvalSeconds[task]
					out = append(out, m)
				}
			}
		}
	}
	return out
}

func (r Recipe) model(weights, task, scheme, variant, tag string, seed int, extra []string) Model {
	L := r.TrainLen[task]
	m := Model{Task: task, Scheme: scheme, Variant: variant, Seed: seed, Name: ModelName(scheme, tag, seed), Steps: r.StepCap[task]}
	m.Dir = filepath.Join(weights, task, m.Name)
	m.Args = []string{"-task", task, "-scheme", scheme}
	if scheme == "learned" {
		// The table must cover the longest evaluated length, and the BOS token before it where
		// the model reads one; rows past L stay at their initialization, which is exactly what
		// the benchmark shows.
		n := L * slices.Max(r.Factors)
		if slices.Contains(extra, "-bos") {
			n++
		}
		m.Args = append(m.Args, "-pe", "max_positions="+strconv.Itoa(n))
	}
	if b := r.TrainBackend[task]; b != "" {
		m.Args = append(m.Args, "--backend", b)
	}
	m.Args = append(m.Args, r.Shape...)
	m.Args = append(m.Args, r.Optim...)
	m.Args = append(m.Args, r.Stop...)
	m.Args = append(m.Args, r.TaskStop[task]...)
	m.Args = append(m.Args, extra...)
	m.Args = append(m.Args, "-seq", strconv.Itoa(L), "-steps", strconv.Itoa(m.Steps), "-seed", strconv.Itoa(seed), "-o", m.Dir)
	m.TrainSeconds = float64(m.Steps) * r.stepSeconds(task, scheme)
	m.EvalSeconds = r.EvalSeconds[task]
	if scheme == "rope" && slices.Contains(r.RopeTasks, task) && variant == "" {
		m.EvalSeconds += r.EvalSecondsPerRopeRows
	}
	return m
}

func (r Recipe) stepSeconds(task, scheme string) float64 {
	c := r.SchemeCost[scheme]
	if c == 0 {
		c = 1
	}
	return r.StepSeconds[task] * c
}

// EvalFactors are the lengths (units of L) a scheme is evaluated at on a task.
func (r Recipe) EvalFactors(task, scheme string) []int {
	if task == tasks.LM && slices.Contains(r.BiasSchemes, scheme) {
		return append(slices.Clone(r.Factors), r.BiasFactors...)
	}
	return r.Factors
}

// SameCommand reports whether a finished checkpoint was trained by exactly these arguments
// (its train.json records the command), so that a rerun keeps it instead of retraining.
func SameCommand(recorded string, args []string) bool {
	return slices.Equal(RecordedArgs(recorded), args)
}

// RecordedArgs are cmd/train's arguments in a train.json command, without -resume (a run
// resumed before cmd/train left it out recorded it; the model is the same).
func RecordedArgs(recorded string) []string {
	return train.WithoutResume(strings.Fields(strings.TrimPrefix(recorded, "go run ./cmd/train")))
}

// Schemes lists every positional scheme in table order: none, absolute, rotary, biases, relative.
func Schemes() []string {
	out := slices.Clone(order)
	for _, n := range positional.Names() {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

var order = []string{"none", "sinusoidal", "learned", "multiplicative", "floater", "rope", "xpos", "alibi", "kerple", "fire", "dape", "t5", "shaw", "xl", "deberta", "cope"}

// SchemeOrder is a scheme's place in the tables (baselines first, unknown names last).
func SchemeOrder(s string) int {
	switch s {
	case "chance", "unigram":
		return -2
	case "bag":
		return -1
	}
	if i := slices.Index(order, s); i >= 0 {
		return i
	}
	return len(order)
}

// Describe summarizes the recipe in one paragraph, for RESULTS.md and -plan.
func (r Recipe) Describe() string {
	if len(r.LRs) > 0 {
		return r.describe3()
	}
	return fmt.Sprintf("Recipe %s: every model `%s %s %s` (about 1.05 M parameters), L = %d tokens for the synthetic tasks and %d bytes for lm and mlm, "+
		"trained until the held-out loss at L has not improved by 1%% for five evaluations (one per 100 steps%s), then cooled down (caps: %d steps for lm and mlm, %d for the synthetic tasks); "+
		"%d seeds per (task, scheme); evaluated at %s L (and %s L for %s on lm); %s train with bfloat16 matrix products (float32 sums).",
		r.Name, strings.Join(r.Shape, " "), strings.Join(r.Optim, " "), strings.Join(r.Stop[:4], " "), r.TrainLen[tasks.Copy], r.TrainLen[tasks.LM], r.floors(),
		r.StepCap[tasks.LM], r.StepCap[tasks.Copy], r.Seeds, joinInts(r.Factors), joinInts(r.BiasFactors), strings.Join(r.BiasSchemes, ", "), r.bf16Tasks())
}

// floors is "; for mlm not before step 2,500" for each task whose TaskStop sets -plateau-min.
func (r Recipe) floors() string {
	var b strings.Builder
	for _, t := range tasks.Names() {
		args := r.TaskStop[t]
		if i := slices.Index(args, "-plateau-min"); i >= 0 && i+1 < len(args) {
			n, _ := strconv.Atoi(args[i+1])
			fmt.Fprintf(&b, "; for %s not before step %s", t, thousands(n))
		}
	}
	return b.String()
}

// thousands writes n with commas between groups of three digits (2500 → "2,500").
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// bf16Tasks names the tasks trained with bfloat16 products, in the tasks' order ("lm, passkey,
// mqar and mlm").
func (r Recipe) bf16Tasks() string {
	var ts []string
	for _, t := range tasks.Names() {
		if strings.Contains(r.TrainBackend[t], "bf16dot=true") {
			ts = append(ts, t)
		}
	}
	if len(ts) < 2 {
		return strings.Join(ts, "")
	}
	return strings.Join(ts[:len(ts)-1], ", ") + " and " + ts[len(ts)-1]
}

func joinInts(xs []int) string {
	var s []string
	for _, x := range xs {
		s = append(s, strconv.Itoa(x))
	}
	return strings.Join(s, ", ")
}

// Hours formats seconds as hours and minutes.
func Hours(seconds float64) string {
	m := int(math.Round(seconds / 60))
	return fmt.Sprintf("%d h %02d min", m/60, m%60)
}
