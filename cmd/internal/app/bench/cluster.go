// The grid on a cluster: -plan's cell list, --cell (one cell in this process, for a scheduler's
// task), --slurm and --k8s (the batch scripts and manifests that run every cell not done), and
// --recipe tiny (a grid that trains in seconds, for testing the cluster path end to end).
package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/posformer/posformer/benchmarks/grid"
	"github.com/posformer/posformer/benchmarks/recipe"
	"github.com/posformer/posformer/benchmarks/report"
	"github.com/posformer/posformer/engine/train/tasks"
)

type clusterOptions struct {
	recipe string
	// --cell / --cells and --index: the cells this process runs.
	cells string
	index int
	cores int
	grid  string // the cell list's fingerprint the scripts were written for
	// -plan --nodes N --cores-per-node C: the wall time on a cluster.
	nodes, coresPerNode int
	// --slurm and its job's options (mem, cpusPerTask and dir serve --k8s too).
	slurm, submit           bool
	partition, time, mem    string
	cpusPerTask, arrayLimit int
	bench, dir              string
	// --k8s
	k8s                        bool
	image, pvc, mount, k8sName string
	parallelism                int
}

func registerCluster(fs *flag.FlagSet, c *clusterOptions) {
	fs.StringVar(&c.recipe, "recipe", "v2", "with --full: the recipe, v2 (the benchmark's) or tiny (1-layer models of 600 steps at L = 16, seconds each, for testing the cluster path; not the benchmark's)")
	fs.StringVar(&c.cells, "cell", "", "with --full: run only these cells, by id (-plan lists them), range A-B, name task/model, or a comma-separated list of those")
	fs.StringVar(&c.cells, "cells", "", "the same as --cell")
	fs.IntVar(&c.index, "index", -1, "with --cells: run only the cell at this position of the list (0 the first): a Kubernetes completion index")
	fs.IntVar(&c.cores, "cores", 0, "with --cell: the cores the cell trains and evaluates on (default: Slurm's SLURM_CPUS_PER_TASK, else every core)")
	fs.StringVar(&c.grid, "grid", "", "with --cell: refuse to run unless the cell list's fingerprint is this one (the scripts --slurm and --k8s write pass it)")
	fs.IntVar(&c.nodes, "nodes", 0, "with -plan: the estimated wall time on this many nodes, and the critical path")
	fs.IntVar(&c.coresPerNode, "cores-per-node", runtime.NumCPU(), "with --nodes: cores per node (one cell per core)")
	fs.BoolVar(&c.slurm, "slurm", false, "with --full: write Slurm batch scripts (one job array per dependency level, then the report) for the cells not done, into --cluster-dir")
	fs.BoolVar(&c.submit, "submit", false, "with --slurm: submit them with sbatch")
	fs.StringVar(&c.partition, "partition", "", "with --slurm: the partition (default: the cluster's)")
	fs.StringVar(&c.time, "time", "4:00:00", "with --slurm: the time limit of each cell's task")
	fs.StringVar(&c.mem, "mem", "4G", "with --slurm or --k8s: the memory of each cell's task")
	fs.IntVar(&c.cpusPerTask, "cpus-per-task", 1, "with --slurm or --k8s: cores per cell (these small models train fastest one per core)")
	fs.IntVar(&c.arrayLimit, "array-limit", 0, "with --slurm: at most this many cells of an array at once (Slurm's %K); 0 for no limit")
	fs.StringVar(&c.bench, "bench", "", "with --slurm: the bench binary the tasks run, on storage every node sees (default: this one)")
	fs.StringVar(&c.dir, "cluster-dir", "", "with --slurm or --k8s: where the scripts or manifests go (default <o>/cluster/slurm or <o>/cluster/k8s)")
	fs.BoolVar(&c.k8s, "k8s", false, "with --full: write Kubernetes Indexed Job manifests for the cells not done (one Job per dependency level, then the report) and apply.sh")
	fs.StringVar(&c.image, "image", "", "with --k8s: the container image (built from benchmarks/grid/Dockerfile)")
	fs.StringVar(&c.pvc, "pvc", "", "with --k8s: the PersistentVolumeClaim (ReadWriteMany) holding the results and weights")
	fs.StringVar(&c.mount, "mount", "/data", "with --k8s: where the claim is mounted; results in <mount>/out, weights in <mount>/weights")
	fs.StringVar(&c.k8sName, "k8s-name", "posformer-grid", "with --k8s: the Jobs' name prefix")
	fs.IntVar(&c.parallelism, "parallelism", 8, "with --k8s: pods of a level at once")
}

// checkCluster checks the cluster flags once parseFlags has settled the rest; set holds the
// flags given.
func checkCluster(o *options, set map[string]bool) error {
	c := &o.cluster
	fullOnly := []string{"recipe", "cell", "cells", "index", "cores", "slurm", "k8s", "nodes"}
	for _, f := range fullOnly {
		if set[f] && !o.full {
			return fmt.Errorf("--%s works on the --full grid; add --full", f)
		}
	}
	if c.recipe != "v2" && c.recipe != "tiny" {
		return fmt.Errorf("--recipe %q: want v2 (the benchmark's) or tiny (for testing the cluster path)", c.recipe)
	}
	modes := 0
	for _, on := range []bool{c.cells != "", c.slurm, c.k8s, o.plan, o.reportOnly} {
		if on {
			modes++
		}
	}
	if modes > 1 {
		return fmt.Errorf("--cell, --slurm, --k8s, -plan and --report exclude each other: give one")
	}
	slurmOnly := []string{"submit", "partition", "time", "array-limit", "bench"}
	for _, f := range slurmOnly {
		if set[f] && !c.slurm {
			return fmt.Errorf("--%s is a --slurm flag; add --slurm", f)
		}
	}
	for _, f := range []string{"image", "pvc", "mount", "k8s-name", "parallelism"} {
		if set[f] && !c.k8s {
			return fmt.Errorf("--%s is a --k8s flag; add --k8s", f)
		}
	}
	if (set["mem"] || set["cpus-per-task"] || set["cluster-dir"]) && !c.slurm && !c.k8s {
		return fmt.Errorf("--mem, --cpus-per-task and --cluster-dir shape --slurm or --k8s jobs; add one")
	}
	if set["cores-per-node"] && c.nodes == 0 {
		return fmt.Errorf("--cores-per-node goes with -plan --nodes N")
	}
	if set["nodes"] && (!o.plan || c.nodes < 1) {
		return fmt.Errorf("--nodes %d: want -plan --nodes N with N at least 1", c.nodes)
	}
	if c.coresPerNode < 1 || c.cpusPerTask < 1 || c.arrayLimit < 0 || c.parallelism < 1 {
		return fmt.Errorf("--cores-per-node, --cpus-per-task and --parallelism want at least 1, --array-limit 0 or more")
	}
	if set["grid"] && c.cells == "" {
		return fmt.Errorf("--grid goes with --cell: it checks that the cell ids mean what they meant when the scripts were written")
	}
	if set["cores"] && (c.cells == "" || c.cores < 1) {
		return fmt.Errorf("--cores %d: want --cell ID --cores N with N at least 1", c.cores)
	}
	if set["index"] && (c.cells == "" || c.index < 0) {
		return fmt.Errorf("--index %d: want --cells LIST --index N with N from 0 (the N-th cell of the list)", c.index)
	}
	if c.k8s {
		if c.image == "" || c.pvc == "" {
			return fmt.Errorf("--k8s needs --image (built from benchmarks/grid/Dockerfile) and --pvc (the claim holding the results and weights)")
		}
		if err := grid.CheckName(c.k8sName); err != nil {
			return err
		}
		if !strings.HasPrefix(c.mount, "/") {
			return fmt.Errorf("--mount %q: want an absolute path in the container, e.g. /data", c.mount)
		}
	}
	return nil
}

// pickRecipe is the recipe --recipe names.
func pickRecipe(o options) recipe.Recipe {
	if o.cluster.recipe == "tiny" {
		return tinyRecipe()
	}
	return recipe.V3
}

// tinyRecipe is v2's grid with models of one narrow layer trained 600 steps at L = 16: a cell
// trains and evaluates in a few seconds, so that a test runs the grid's whole path (the cells, their
// dependencies, the report) on a real scheduler. copy's RoPE model gets the PI fine-tune, so
// that the grid has a cell that starts from another.
func tinyRecipe() recipe.Recipe {
	r := recipe.V2
	r.Name = "tiny"
	r.Shape = []string{"-dim", "32", "-layers", "1", "-heads", "2", "-kv-heads", "2", "-hidden", "64", "-ctx", "1024"}
	r.Optim = []string{"-batch", "8", "-lr", "3e-3", "-warmup", "5", "-wd", "0.01"}
	r.Stop = []string{"-eval-every", "50", "-save-every", "50", "-eval-windows", "8"}
	r.TaskStop = nil
	r.Batch = 8
	r.TrainLen, r.StepCap, r.StepSeconds, r.EvalSeconds = map[string]int{}, map[string]int{}, map[string]float64{}, map[string]float64{}
	for _, t := range tasks.Names() {
		// A copy step took 6 ms on one core, its evaluation 0.5 s.
		r.TrainLen[t], r.StepCap[t], r.StepSeconds[t], r.EvalSeconds[t] = 16, 600, 0.01, 1
	}
	r.SchemeCost = nil
	r.RandPosTasks = nil
	r.PITasks, r.PISteps, r.PIBatch = []string{tasks.Copy}, 200, 2
	r.BiasFactors, r.RopeTasks, r.ShipTasks = nil, nil, nil
	r.TrainBackend = nil
	return r
}

// runCluster handles the cluster modes that need no training machinery (-plan's list, --slurm,
// --k8s) and refuses a --cell whose --grid is not this cell list's; handled is false for the
// others.
func runCluster(o options, cells []grid.Cell) (handled bool, err error) {
	c := o.cluster
	switch {
	case c.grid != "" && c.grid != grid.Fingerprint(cells):
		return true, fmt.Errorf("--grid %s: this binary's cell list is %s, another (the recipe or the flags changed since the scripts were written); write them again with --slurm or --k8s",
			c.grid, grid.Fingerprint(cells))
	case o.plan:
		grid.Plan(os.Stdout, o.out, cells, o.jobs, runtime.NumCPU(), report.Compared())
		fmt.Println()
		grid.PlanCells(os.Stdout, o.out, cells)
		if c.nodes > 0 {
			fmt.Println()
			grid.PlanNodes(os.Stdout, o.out, cells, c.nodes, c.coresPerNode)
		}
		return true, nil
	case c.slurm:
		return true, writeSlurm(o, cells)
	case c.k8s:
		return true, writeK8s(o, cells)
	}
	return false, nil
}

// gridArgs are the flags that rebuild this grid's cell list in another process, with its
// results in out, its weights in weights and its shipped models in ship.
func gridArgs(o options, out, weights, ship string) []string {
	args := []string{"--full", "-o", out, "-weights", weights, "-ship", ship,
		"-task", strings.Join(o.tasks, ","), "-scheme", strings.Join(o.schemes, ",")}
	if o.cluster.recipe != "v2" {
		args = append(args, "--recipe", o.cluster.recipe)
	}
	if o.seeds > 0 {
		args = append(args, "-seeds", strconv.Itoa(o.seeds))
	}
	if o.steps > 0 {
		args = append(args, "-steps", strconv.Itoa(o.steps))
	}
	if o.backend != "" {
		args = append(args, "--backend", o.backend)
	}
	return args
}

func writeSlurm(o options, cells []grid.Cell) error {
	c := o.cluster
	abs := func(p string) (string, error) {
		if p == "" {
			return "", nil
		}
		return filepath.Abs(p)
	}
	bin := c.bench
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("finding this binary: %w (give --bench PATH)", err)
		}
		if strings.Contains(exe, "go-build") {
			return fmt.Errorf("--slurm needs a bench binary every node can run, not go run's: go build -o <shared>/bench ./cmd/bench, then run that (or give --bench PATH)")
		}
		bin = exe
	}
	var paths [5]string
	for i, p := range []string{bin, o.out, o.weights, o.ship, c.dir} {
		var err error
		if paths[i], err = abs(p); err != nil {
			return err
		}
	}
	dir := paths[4]
	if dir == "" {
		dir = filepath.Join(paths[1], "cluster", "slurm")
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	s := grid.Slurm{
		Command: append([]string{paths[0]}, gridArgs(o, paths[1], paths[2], paths[3])...), Grid: grid.Fingerprint(cells),
		Dir: dir, Workdir: wd, JobName: "posformer-grid",
		Partition: c.partition, Time: c.time, Mem: c.mem, CPUsPerTask: c.cpusPerTask, ArrayLimit: c.arrayLimit,
	}
	levels := grid.Levels(o.out, cells)
	submit, err := s.Write(levels)
	if err != nil {
		return err
	}
	n, top := 0, 0
	for _, l := range levels {
		n += len(l)
		top = max(top, slices.Max(l))
	}
	if top >= 1001 {
		// Slurm refuses array indices at or past MaxArraySize, 1001 unless slurm.conf raises it.
		fmt.Fprintf(os.Stderr, "bench: the cell ids reach %d: the cluster's MaxArraySize (scontrol show config) must be above it\n", top)
	}
	fmt.Fprintf(os.Stderr, "bench: %d cells to run in %d dependency levels (one job array each), then the report: %s\n", n, len(levels), submit)
	if !c.submit {
		fmt.Fprintf(os.Stderr, "bench: submit with sh %s (or add --submit)\n", submit)
		return nil
	}
	cmd := exec.Command("sh", submit)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("submitting %s: %w (is sbatch on the PATH?)", submit, err)
	}
	return nil
}

func writeK8s(o options, cells []grid.Cell) error {
	c := o.cluster
	ship := ""
	if o.ship != "" {
		ship = c.mount + "/bench"
	}
	k := grid.K8s{Name: c.k8sName, Image: c.image, PVC: c.pvc, Mount: c.mount,
		Args:        gridArgs(o, c.mount+"/out", c.mount+"/weights", ship),
		Parallelism: c.parallelism, CPU: strconv.Itoa(c.cpusPerTask), Mem: k8sMem(c.mem), Retries: 3, Grid: grid.Fingerprint(cells)}
	dir := c.dir
	if dir == "" {
		dir = filepath.Join(o.out, "cluster", "k8s")
	}
	levels := grid.Levels(o.out, cells)
	apply, err := k.Write(dir, levels)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "bench: %d Indexed Jobs (one per dependency level) and the report's in %s; run sh %s\n", len(levels), dir, apply)
	fmt.Fprintf(os.Stderr, "bench: they read the cells' state from %s: copy it to the claim's out/ first if it holds finished cells\n", o.out)
	return nil
}

// k8sMem turns Slurm's memory suffixes (4G, 512M) into Kubernetes' (4Gi, 512Mi).
func k8sMem(m string) string {
	if strings.HasSuffix(m, "G") || strings.HasSuffix(m, "M") || strings.HasSuffix(m, "K") {
		return m + "i"
	}
	return m
}

// runCells runs the cells --cell selects, one after another, each on this process's cores
// (Slurm's --cpus-per-task when it set them). A cell another process holds is left to it.
func runCells(o options, runner *grid.Runner, cells []grid.Cell, logs string) error {
	ids, err := grid.Select(cells, o.cluster.cells)
	if err != nil {
		return err
	}
	if i := o.cluster.index; i >= 0 {
		if i >= len(ids) {
			return fmt.Errorf("--index %d: --cells %s has %d cells (0-%d)", i, o.cluster.cells, len(ids), len(ids)-1)
		}
		ids = ids[i : i+1]
	}
	// A scheduler's cancel (scancel, a pod's deletion) sends SIGTERM: the training stops
	// between two steps, its checkpoint kept for the next run.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	runner.Train = grid.TrainWith(ctx, parseTrainArgs, logs, trainBar)
	runner.Jobs, runner.Cores = 1, taskCores(o.cluster.cores)
	var failed []string
	for _, i := range ids {
		c := cells[i]
		if grid.Finished(o.out, cells)[c.ID()] {
			fmt.Fprintf(os.Stderr, "bench: cell %d, %s, is done already: skipped\n", i, c.ID())
			continue
		}
		fmt.Fprintf(os.Stderr, "bench: cell %d, %s, on %d cores\n", i, c.ID(), runner.Cores)
		if step := grid.LastStep(c.Dir); step > 0 && !c.Baseline {
			fmt.Fprintf(os.Stderr, "bench: cell %d was begun (its curve ends at step %d): resuming from its last checkpoint\n", i, step)
		}
		err := runner.RunOne(cells, i)
		switch {
		case errors.Is(err, grid.ErrHeld):
			fmt.Fprintf(os.Stderr, "bench: %v; left to it\n", err)
		case err != nil:
			failed = append(failed, fmt.Sprintf("cell %d: %v", i, err))
		default:
			fmt.Fprintf(os.Stderr, "bench: cell %d, %s, done\n", i, c.ID())
		}
		if ctx.Err() != nil {
			break
		}
	}
	if len(failed) > 0 {
		return errors.New(strings.Join(failed, "; "))
	}
	return nil
}

// taskCores is the cores a cell may use: --cores, else Slurm's SLURM_CPUS_PER_TASK when it set
// it, else the machine's (a pod sees its node's cores, hence --cores in the Jobs).
func taskCores(given int) int {
	if given > 0 {
		return given
	}
	if n, err := strconv.Atoi(os.Getenv("SLURM_CPUS_PER_TASK")); err == nil && n > 0 {
		return n
	}
	return runtime.NumCPU()
}
