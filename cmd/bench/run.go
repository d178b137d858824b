// run ties the benchmark together: train (--full), evaluate every task's rows on its cells,
// write CSVs, plots, RESULTS.md and the manifest.
package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/posformer/posformer/benchmarks/corpus"
	"github.com/posformer/posformer/benchmarks/tasks"
	"github.com/posformer/posformer/cmd/internal/progress"
	"github.com/posformer/posformer/engine"
	"github.com/posformer/posformer/models"
)

func run(o options) error {
	start := time.Now()
	if o.reportOnly {
		return writeReport(o.out)
	}
	if o.full {
		var jobs []trainJob
		for _, task := range o.tasks {
			seeds := seedsPerTask[task]
			if o.seeds > 0 {
				seeds = o.seeds
			}
			for _, s := range o.schemes {
				if !applies(task, s) {
					continue
				}
				for seed := 1; seed <= max(seeds, 1); seed++ {
					dir := modelDir(o.weights, task, s, seed)
					if _, err := readTrainInfo(dir); err == nil && o.resume {
						continue
					}
					jobs = append(jobs, trainJob{task, s, seed, dir})
				}
			}
		}
		err := train(o, jobs)
		if merr := writeManifest(o.weights); merr != nil && err == nil {
			err = merr
		}
		if err != nil {
			return err
		}
	}

	backend, err := engine.NewBackend(o.backend)
	if err != nil {
		return err
	}
	b := fullBudget
	if o.quick {
		b = quickBudget
	}
	var data *corpus.Corpus
	for _, t := range o.tasks {
		if t == tasks.LM || t == tasks.MLM {
			if data, err = loadCorpus(o.quick); err != nil {
				return err
			}
			break
		}
	}
	var evalData, trainData []byte
	if data != nil {
		evalData, trainData = data.Eval, data.Train
	}

	type work struct {
		task  string
		rows  []row
		cells []cell
	}
	var todo []work
	total := 0
	for _, task := range o.tasks {
		cells, err := plan(task, b, o.lengths, evalData)
		if err != nil {
			return err
		}
		var rows []row
		if o.model != "" {
			ti, err := checkTask(o.model, task)
			if err != nil {
				return err
			}
			rows = []row{{Model: filepath.Base(o.model), Scheme: ti.Scheme, Seed: ti.Seed, TrainLen: ti.SeqLen, Dir: o.model}}
			rows = append(rows, variantRows(task, rows[0])...)
		} else if rows, err = findRows(o.weights, task, o.schemes); err != nil {
			return err
		}
		if len(rows) == 0 {
			fmt.Fprintf(os.Stderr, "bench: no finished %s checkpoints under %s for the chosen schemes; train them with --full -task %s\n", task, filepath.Join(o.weights, task), task)
			continue
		}
		for _, c := range cells {
			total += len(rows) * len(c.exs)
		}
		todo = append(todo, work{task, rows, cells})
	}
	if len(todo) == 0 {
		return fmt.Errorf("nothing to evaluate: no finished checkpoints under %s (run with --full to train them)", o.weights)
	}

	bar := progress.New(os.Stderr, "bench", total)
	done := 0
	for _, w := range todo {
		rs, err := evaluate(backend, w.task, w.rows, w.cells, b, bar, &done)
		if err != nil {
			return err
		}
		rs = append(baseline(w.task, w.cells, trainData, w.rows[0].TrainLen), rs...)
		switch {
		case o.model != "":
			printTables(w.task, rs)
		case o.quick:
			printTables(w.task, rs)
			if err := writeCSV(filepath.Join(o.out, "results", "quick", w.task+".csv"), rs); err != nil {
				return err
			}
		default:
			old, err := readCSV(csvPath(o.out, w.task))
			if err != nil {
				return err
			}
			if o.lengths != nil {
				return fmt.Errorf("-lengths changes the table's columns; use it with --quick or -m (tables on stdout)")
			}
			if err := writeCSV(csvPath(o.out, w.task), merge(old, rs)); err != nil {
				return err
			}
		}
	}
	bar.Finish()
	if o.model == "" && !o.quick {
		if err := writeReport(o.out); err != nil {
			return err
		}
		if err := writeManifest(o.weights); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "bench: wrote %s and %s in %s\n", filepath.Join(o.out, "RESULTS.md"), filepath.Join(o.out, "results"), time.Since(start).Round(time.Second))
		return nil
	}
	fmt.Fprintf(os.Stderr, "bench: done in %s\n", time.Since(start).Round(time.Second))
	return nil
}

func printTables(task string, rs []result) {
	for _, m := range metricsOf(task) {
		fmt.Printf("\n%s %s\n\n%s", task, m, table(rs, m))
	}
}

// manifestEntry is one checkpoint in weights/bench/MANIFEST.json.
type manifestEntry struct {
	Task          string  `json:"task"`
	Scheme        string  `json:"scheme"`
	Dir           string  `json:"dir"`
	Steps         int     `json:"steps"`
	Seed          int     `json:"seed"`
	WallSeconds   float64 `json:"wall_seconds"`
	Cores         int     `json:"cores,omitempty"`
	FinalLoss     float64 `json:"final_loss"`
	FinalEvalLoss float64 `json:"final_eval_loss"`
	Bytes         int64   `json:"bytes"`
	Command       string  `json:"command"`
}

func readManifest(weights string) []manifestEntry {
	var es []manifestEntry
	data, err := os.ReadFile(filepath.Join(weights, "MANIFEST.json"))
	if err == nil {
		json.Unmarshal(data, &es) // A damaged manifest only costs the ETA its history.
	}
	return es
}

// writeManifest rebuilds MANIFEST.json and MANIFEST.md from every finished checkpoint's train.json.
func writeManifest(weights string) error {
	var es []manifestEntry
	for _, task := range tasks.Names() {
		entries, _ := os.ReadDir(filepath.Join(weights, task))
		for _, e := range entries {
			dir := filepath.Join(weights, task, e.Name())
			ti, err := readTrainInfo(dir)
			if err != nil || !e.IsDir() {
				continue
			}
			var size int64
			for _, f := range []string{models.ConfigFile, models.WeightsFile, "train.json"} {
				if st, err := os.Stat(filepath.Join(dir, f)); err == nil {
					size += st.Size()
				}
			}
			es = append(es, manifestEntry{Task: ti.Task, Scheme: ti.Scheme, Dir: filepath.ToSlash(filepath.Join(task, e.Name())), Steps: ti.Steps, Seed: ti.Seed,
				WallSeconds: ti.WallSeconds, Cores: ti.GOMAXPROCS, FinalLoss: ti.FinalLoss, FinalEvalLoss: ti.FinalEvalLoss, Bytes: size, Command: ti.Command})
		}
	}
	if len(es) == 0 {
		return nil
	}
	sort.SliceStable(es, func(i, j int) bool {
		if es[i].Task != es[j].Task {
			return taskIndex(es[i].Task) < taskIndex(es[j].Task)
		}
		return schemeOrder(es[i].Scheme)*100+es[i].Seed < schemeOrder(es[j].Scheme)*100+es[j].Seed
	})
	js, err := json.MarshalIndent(es, "", "  ")
	if err != nil {
		return fmt.Errorf("writing the manifest: %w", err)
	}
	if err := models.WriteFileAtomic(filepath.Join(weights, "MANIFEST.json"), append(js, '\n')); err != nil {
		return err
	}
	var b strings.Builder
	var totalBytes int64
	var totalWall float64
	b.WriteString("# Benchmark checkpoints\n\nWritten by `go run ./cmd/bench` from each checkpoint's `train.json` (also as MANIFEST.json).\n" +
		"Every model of a task was trained by the same `cmd/train` command except for `-scheme` and `-seed`\n" +
		"(see `cmd/bench/recipe.go`). Wall times are on a 2-core machine, pure-Go backend, on `cores` cores (GOMAXPROCS;\n" +
		"`-`: not recorded, both cores shared with other runs), and vary with the load.\n" +
		"Losses are nats per scored token (copy and passkey: the scored answer tokens only).\n\n")
	b.WriteString("| task | checkpoint | scheme | steps | seed | wall s | cores | final loss | final eval loss | size KB |\n| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, e := range es {
		cores := "-"
		if e.Cores > 0 {
			cores = strconv.Itoa(e.Cores)
		}
		fmt.Fprintf(&b, "| %s | `%s` | `%s` | %d | %d | %.0f | %s | %.3f | %.3f | %d |\n", e.Task, e.Dir, e.Scheme, e.Steps, e.Seed, e.WallSeconds, cores, e.FinalLoss, e.FinalEvalLoss, e.Bytes/1024)
		totalBytes += e.Bytes
		totalWall += e.WallSeconds
	}
	fmt.Fprintf(&b, "\n%d checkpoints, %.1f MB, %.0f min of training in total.\n", len(es), float64(totalBytes)/1e6, math.Round(totalWall/60))
	if len(es) > 0 {
		fmt.Fprintf(&b, "\nCommand of the first (the others differ in -task, -scheme, -seed, -o, -steps):\n\n```sh\n%s\n```\n", es[0].Command)
	}
	return models.WriteFileAtomic(filepath.Join(weights, "MANIFEST.md"), []byte(b.String()))
}

func taskIndex(t string) int {
	for i, n := range tasks.Names() {
		if n == t {
			return i
		}
	}
	return len(tasks.Names())
}
