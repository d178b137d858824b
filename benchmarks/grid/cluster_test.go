package grid

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The Slurm scripts: a job array per level, each level after the one before, throttled with %K,
// the report last; each task runs its array index as the cell; the #SBATCH options as given.
func TestSlurmScripts(t *testing.T) {
	dir := t.TempDir()
	s := Slurm{Command: []string{"/shared/bench", "--full", "-o", "/shared/out", "-ship", ""}, Dir: dir, Workdir: "/shared",
		JobName: "g", Grid: "abc123", Partition: "cpu", Time: "2:00:00", Mem: "4G", CPUsPerTask: 1, ArrayLimit: 50}
	submit, err := s.Write([][]int{{0, 2, 3, 5, 6}, {1, 4}})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(submit)
	text := string(data)
	for _, want := range []string{
		"level0=$(sbatch --parsable --array=0,2-3,5-6%50 cell.sbatch)",
		"level1=$(sbatch --parsable --array=1,4%50 --dependency=afterany:$level0 cell.sbatch)",
		"report=$(sbatch --parsable --dependency=afterany:$level1 report.sbatch)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("submit.sh lacks %q:\n%s", want, text)
		}
	}
	cell, _ := os.ReadFile(filepath.Join(dir, SlurmCellScript))
	for _, want := range []string{"#SBATCH --partition=cpu\n", "#SBATCH --time=2:00:00\n", "#SBATCH --mem=4G\n", "#SBATCH --cpus-per-task=1\n",
		"#SBATCH --chdir=/shared\n", "#SBATCH --output=" + filepath.Join(dir, "logs") + "/%x-%A_%a.out\n",
		"exec /shared/bench --full -o /shared/out -ship '' --grid abc123 --cell \"$SLURM_ARRAY_TASK_ID\"\n"} {
		if !strings.Contains(string(cell), want) {
			t.Errorf("cell.sbatch lacks %q:\n%s", want, cell)
		}
	}
	report, _ := os.ReadFile(filepath.Join(dir, SlurmReportScript))
	if !strings.Contains(string(report), "exec /shared/bench --full -o /shared/out -ship '' --report\n") {
		t.Errorf("report.sbatch:\n%s", report)
	}
	if _, err := s.Write(nil); err == nil {
		t.Error("no cells to run: no error")
	}
}

// The Kubernetes manifests parse as batch/v1 Jobs with every field a Job requires, the levels'
// Jobs Indexed with one completion per cell, their index passed to --index.
func TestK8sManifests(t *testing.T) {
	dir := t.TempDir()
	k := K8s{Name: "posformer-grid", Image: "registry.example/posformer-bench:1", PVC: "grid-data", Mount: "/data",
		Args: []string{"--full", "-o", "/data/out"}, Parallelism: 4, CPU: "1", Mem: "4Gi", Retries: 3, Grid: "abc123"}
	levels := [][]int{{0, 2, 3, 5, 6}, {1, 4}}
	apply, err := k.Write(dir, levels)
	if err != nil {
		t.Fatal(err)
	}
	script, _ := os.ReadFile(apply)
	names := []string{"posformer-grid-level0", "posformer-grid-level1", "posformer-grid-report"}
	var order []int
	for _, n := range names {
		order = append(order, strings.Index(string(script), "kubectl apply -f "+n+".json\nwait_job "+n+"\n"))
	}
	if slices.Contains(order, -1) || !slices.IsSorted(order) {
		t.Errorf("apply.sh does not apply %v in order:\n%s", names, script)
	}
	dns := regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	for i, n := range names {
		data, err := os.ReadFile(filepath.Join(dir, n+".json"))
		if err != nil {
			t.Fatal(err)
		}
		// Read back generically, as kubectl would, not into the writer's own types.
		var j map[string]any
		if err := json.Unmarshal(data, &j); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		get := func(path ...string) any {
			var v any = j
			for _, p := range path {
				m, ok := v.(map[string]any)
				if !ok {
					return nil
				}
				v = m[p]
			}
			return v
		}
		if get("apiVersion") != "batch/v1" || get("kind") != "Job" || get("metadata", "name") != n || !dns.MatchString(n) {
			t.Errorf("%s: apiVersion %v, kind %v, name %v", n, get("apiVersion"), get("kind"), get("metadata", "name"))
		}
		pod := get("spec", "template", "spec")
		if rp := get("spec", "template", "spec", "restartPolicy"); rp != "Never" && rp != "OnFailure" {
			t.Errorf("%s: restartPolicy %v", n, rp)
		}
		cs, _ := pod.(map[string]any)["containers"].([]any)
		if len(cs) != 1 {
			t.Fatalf("%s: %d containers", n, len(cs))
		}
		c := cs[0].(map[string]any)
		if c["name"] == "" || c["name"] == nil || c["image"] != k.Image {
			t.Errorf("%s: container name %v, image %v", n, c["name"], c["image"])
		}
		mounts, _ := c["volumeMounts"].([]any)
		vols, _ := pod.(map[string]any)["volumes"].([]any)
		if len(mounts) != 1 || len(vols) != 1 || mounts[0].(map[string]any)["name"] != vols[0].(map[string]any)["name"] ||
			vols[0].(map[string]any)["persistentVolumeClaim"].(map[string]any)["claimName"] != "grid-data" {
			t.Errorf("%s: mounts %v, volumes %v; want the claim grid-data mounted", n, mounts, vols)
		}
		args := strings.Join(toStrings(c["args"]), " ")
		completions, _ := get("spec", "completions").(float64)
		if backoff, _ := get("spec", "backoffLimit").(float64); (i < len(levels) && int(backoff) != 3*len(levels[i])) || (i == len(levels) && backoff != 3) {
			t.Errorf("%s: backoffLimit %v, want 3 per cell", n, backoff)
		}
		parallelism, _ := get("spec", "parallelism").(float64)
		if i < len(levels) {
			if get("spec", "completionMode") != "Indexed" || int(completions) != len(levels[i]) || int(parallelism) != min(4, len(levels[i])) {
				t.Errorf("%s: completionMode %v, completions %v, parallelism %v", n, get("spec", "completionMode"), completions, parallelism)
			}
			if want := "--full -o /data/out --grid abc123 --cells " + Ranges(levels[i]) + " --index $(JOB_COMPLETION_INDEX) --cores 1"; args != want {
				t.Errorf("%s: args %q, want %q", n, args, want)
			}
			env, _ := c["env"].([]any)
			if len(env) != 1 || env[0].(map[string]any)["name"] != "JOB_COMPLETION_INDEX" {
				t.Errorf("%s: env %v, want JOB_COMPLETION_INDEX from the completion index", n, env)
			}
		} else if completions != 1 || parallelism != 1 || args != "--full -o /data/out --report" {
			t.Errorf("%s: completions %v, parallelism %v, args %q", n, completions, parallelism, args)
		}
	}
	for _, bad := range []string{"", "Grid", "-g", "g-", strings.Repeat("g", 41), "g_1"} {
		if CheckName(bad) == nil {
			t.Errorf("CheckName(%q): no error", bad)
		}
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}
