package grid

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/posformer/posformer/models"
)

// K8s describes the Kubernetes Jobs that run the grid's cells: one Indexed Job per dependency
// level (Levels), whose completion index i runs the i-th cell of the level (`--cells LIST
// --index $(JOB_COMPLETION_INDEX)`), then a Job that writes the report. A Job cannot wait for
// another, so apply.sh applies each after the one before has ended (Complete or Failed).
//
// The manifests are JSON, which kubectl reads as it reads YAML: the standard library writes it,
// and a test checks the fields a batch/v1 Job requires.
type K8s struct {
	Name        string   // the Jobs' name prefix (lowercase, digits and '-')
	Image       string   // an image built from benchmarks/grid/Dockerfile: bench is its entrypoint
	PVC         string   // the PersistentVolumeClaim holding the results and weights (ReadWriteMany)
	Mount       string   // where it is mounted in the container, e.g. /data
	Args        []string // bench's flags that rebuild the same cell list, paths under Mount
	Parallelism int      // pods of a level at once
	CPU, Mem    string   // each pod's request, e.g. "1" and "4Gi"
	// Retries is how many times a cell's pod may fail: a level's backoffLimit is Retries times
	// its cells, since the limit counts the failures of every index and one cell failing must not
	// stop the level's others. A retried pod resumes its cell from its checkpoint.
	Retries int
	Grid    string // the cell list's fingerprint (Fingerprint), passed to each cell's pod with --grid
}

// Job is the part of a batch/v1 Job this package writes (and its test reads back).
type Job struct {
	APIVersion string  `json:"apiVersion"`
	Kind       string  `json:"kind"`
	Metadata   Meta    `json:"metadata"`
	Spec       JobSpec `json:"spec"`
}

// Meta is an object's metadata.
type Meta struct {
	Name   string            `json:"name,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
}

// JobSpec is a Job's spec: Indexed with one completion per cell.
type JobSpec struct {
	CompletionMode string      `json:"completionMode,omitempty"`
	Completions    *int        `json:"completions,omitempty"`
	Parallelism    *int        `json:"parallelism,omitempty"`
	BackoffLimit   *int        `json:"backoffLimit,omitempty"`
	Template       PodTemplate `json:"template"`
}

// PodTemplate is the pod each completion runs.
type PodTemplate struct {
	Metadata Meta    `json:"metadata"`
	Spec     PodSpec `json:"spec"`
}

// PodSpec is a pod's spec: one container, the claim as a volume.
type PodSpec struct {
	RestartPolicy string      `json:"restartPolicy"`
	Containers    []Container `json:"containers"`
	Volumes       []Volume    `json:"volumes,omitempty"`
}

// Container is bench with the grid's flags.
type Container struct {
	Name         string         `json:"name"`
	Image        string         `json:"image"`
	Args         []string       `json:"args,omitempty"`
	Env          []EnvVar       `json:"env,omitempty"`
	Resources    map[string]any `json:"resources,omitempty"`
	VolumeMounts []VolumeMount  `json:"volumeMounts,omitempty"`
}

// EnvVar is an environment variable taken from the pod (the downward API).
type EnvVar struct {
	Name      string         `json:"name"`
	ValueFrom map[string]any `json:"valueFrom,omitempty"`
}

// VolumeMount mounts the claim in the container.
type VolumeMount struct {
	Name      string `json:"name"`
	MountPath string `json:"mountPath"`
}

// Volume is the claim holding the results and weights.
type Volume struct {
	Name                  string            `json:"name"`
	PersistentVolumeClaim map[string]string `json:"persistentVolumeClaim,omitempty"`
}

// Jobs are the level Jobs and the report Job.
func (k K8s) Jobs(levels [][]int) []Job {
	var out []Job
	for i, ids := range levels {
		n := len(ids)
		args := append(append([]string(nil), k.Args...), "--grid", k.Grid, "--cells", Ranges(ids), "--index", "$(JOB_COMPLETION_INDEX)", "--cores", k.CPU)
		j := k.job(fmt.Sprintf("%s-level%d", k.Name, i), args, n, min(max(k.Parallelism, 1), n))
		retries := k.Retries * n
		j.Spec.BackoffLimit = &retries
		j.Spec.CompletionMode = "Indexed"
		// The controller sets JOB_COMPLETION_INDEX itself since Kubernetes 1.22; set here too,
		// from the annotation every version has, so that $(JOB_COMPLETION_INDEX) always expands.
		j.Spec.Template.Spec.Containers[0].Env = []EnvVar{{Name: "JOB_COMPLETION_INDEX", ValueFrom: map[string]any{
			"fieldRef": map[string]string{"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}}}
		out = append(out, j)
	}
	return append(out, k.job(k.Name+"-report", append(append([]string(nil), k.Args...), "--report"), 1, 1))
}

func (k K8s) job(name string, args []string, completions, parallelism int) Job {
	retries := k.Retries
	c := Container{Name: "bench", Image: k.Image, Args: args,
		VolumeMounts: []VolumeMount{{Name: "grid", MountPath: k.Mount}}}
	req := map[string]string{}
	if k.CPU != "" {
		req["cpu"] = k.CPU
	}
	if k.Mem != "" {
		req["memory"] = k.Mem
	}
	if len(req) > 0 {
		c.Resources = map[string]any{"requests": req}
	}
	labels := map[string]string{"app": k.Name}
	return Job{APIVersion: "batch/v1", Kind: "Job", Metadata: Meta{Name: name, Labels: labels},
		Spec: JobSpec{Completions: &completions, Parallelism: &parallelism, BackoffLimit: &retries,
			Template: PodTemplate{Metadata: Meta{Labels: labels}, Spec: PodSpec{RestartPolicy: "Never", Containers: []Container{c},
				Volumes: []Volume{{Name: "grid", PersistentVolumeClaim: map[string]string{"claimName": k.PVC}}}}}}}
}

// Write writes each Job to <dir>/<job name>.json and apply.sh, which applies them in order,
// each after the one before has ended; it returns apply.sh's path.
func (k K8s) Write(dir string, levels [][]int) (string, error) {
	if len(levels) == 0 {
		return "", fmt.Errorf("every cell is done: nothing to run (--report writes the report)")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating the manifests' folder: %w", err)
	}
	var b strings.Builder
	b.WriteString("#!/bin/sh\n# Applies the grid's Jobs one after another: each dependency level's Indexed Job, then the report.\n" +
		"# Run it again (after kubectl delete -l app=NAME) to rerun what failed: finished cells are skipped.\nset -e\ncd \"$(dirname \"$0\")\"\n" +
		"wait_job() {\n\twhile :; do\n\t\ts=$(kubectl get job \"$1\" -o 'jsonpath={.status.conditions[?(@.status==\"True\")].type}')\n" +
		"\t\tcase \"$s\" in *Complete*|*Failed*) echo \"$1: $s\"; return ;; esac\n\t\tsleep 30\n\tdone\n}\n")
	for _, j := range k.Jobs(levels) {
		data, err := json.MarshalIndent(j, "", "  ")
		if err != nil {
			return "", err
		}
		path := filepath.Join(dir, j.Metadata.Name+".json")
		if err := models.WriteFileAtomic(path, append(data, '\n')); err != nil {
			return "", fmt.Errorf("writing %s: %w", path, err)
		}
		fmt.Fprintf(&b, "kubectl apply -f %s\nwait_job %s\n", shellQuote(j.Metadata.Name+".json"), shellQuote(j.Metadata.Name))
	}
	path := filepath.Join(dir, "apply.sh")
	if err := models.WriteFileAtomic(path, []byte(b.String())); err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	return path, os.Chmod(path, 0o755)
}

// CheckName reports whether a Job name prefix is valid for Kubernetes (a DNS label, with room
// for the "-levelN" and the pods' suffixes).
func CheckName(name string) error {
	if name == "" || len(name) > 40 || strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" ||
		name[0] == '-' || name[len(name)-1] == '-' {
		return fmt.Errorf("--k8s-name %q: want up to 40 lowercase letters, digits and '-', e.g. posformer-grid", name)
	}
	return nil
}
