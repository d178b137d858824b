package grid

import (
	"container/heap"
	"fmt"
	"io"
	"strings"

	"github.com/posformer/posformer/benchmarks/recipe"
)

// Schedule is the estimated wall time of the cells not done on a cluster of slots cores, one
// cell per core (as the grid runs them), each cell starting once the cells it needs are done.
type Schedule struct {
	Slots int
	Cells int     // cells to run
	Work  float64 // one-core seconds of them all
	Wall  float64 // the simulated wall time
	// Critical is the longest chain of dependent cells (IDs, first to last) and Path its
	// seconds: no number of cores finishes sooner.
	Critical []string
	Path     float64
}

// Simulate schedules the cells not done on slots cores: whenever a core is free it takes the
// ready cell with the longest chain still behind it (its own estimate plus its longest line of
// dependents), the rule that keeps a long chain from starting last. Estimates are the recipe's
// (training at the step caps), so the wall time is an upper bound on a cluster as fast a core
// as the recipe's pilot.
func Simulate(out string, cells []Cell, slots int) Schedule {
	slots = max(slots, 1)
	finished := Finished(out, cells)
	var todo []int
	idx := map[string]int{}
	for i, c := range cells {
		if !finished[c.ID()] {
			idx[c.ID()] = len(todo)
			todo = append(todo, i)
		}
	}
	n := len(todo)
	s := Schedule{Slots: slots, Cells: n}
	needs := make([][]int, n)
	dependents := make([][]int, n)
	for k, i := range todo {
		s.Work += cells[i].Seconds()
		for _, id := range NeedsOf(cells[i]) {
			if j, ok := idx[id]; ok {
				needs[k] = append(needs[k], j)
				dependents[j] = append(dependents[j], k)
			}
		}
	}
	// tail[k]: cell k's seconds plus the longest chain of its dependents; next[k] the first of it.
	tail := make([]float64, n)
	next := make([]int, n)
	known := make([]bool, n)
	var walk func(k int, depth int) float64
	walk = func(k int, depth int) float64 {
		if known[k] || depth > n { // depth > n: a cycle, the recipe's bug; RunOne reports it
			return tail[k]
		}
		known[k] = true
		best, after := 0.0, -1
		for _, d := range dependents[k] {
			if t := walk(d, depth+1); t > best {
				best, after = t, d
			}
		}
		tail[k], next[k] = cells[todo[k]].Seconds()+best, after
		return tail[k]
	}
	start := -1
	for k := range n {
		if walk(k, 0) > s.Path && len(needs[k]) == 0 {
			s.Path, start = tail[k], k
		}
	}
	for k := start; k >= 0; k = next[k] {
		s.Critical = append(s.Critical, cells[todo[k]].ID())
	}
	// The simulation: events are cells ending.
	waiting := make([]int, n)
	ready := &byTail{tail: tail}
	for k := range n {
		waiting[k] = len(needs[k])
		if waiting[k] == 0 {
			heap.Push(ready, k)
		}
	}
	running := &byEnd{}
	now, free := 0.0, slots
	for ready.Len() > 0 || running.Len() > 0 {
		for free > 0 && ready.Len() > 0 {
			k := heap.Pop(ready).(int)
			heap.Push(running, event{k, now + cells[todo[k]].Seconds()})
			free--
		}
		e := heap.Pop(running).(event)
		now = e.end
		free++
		for _, d := range dependents[e.cell] {
			if waiting[d]--; waiting[d] == 0 {
				heap.Push(ready, d)
			}
		}
	}
	s.Wall = now
	return s
}

type event struct {
	cell int
	end  float64
}

type byEnd []event

func (h byEnd) Len() int           { return len(h) }
func (h byEnd) Less(i, j int) bool { return h[i].end < h[j].end }
func (h byEnd) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *byEnd) Push(x any)        { *h = append(*h, x.(event)) }
func (h *byEnd) Pop() any          { e := (*h)[len(*h)-1]; *h = (*h)[:len(*h)-1]; return e }

type byTail struct {
	ks   []int
	tail []float64
}

func (h byTail) Len() int { return len(h.ks) }
func (h byTail) Less(i, j int) bool {
	a, b := h.ks[i], h.ks[j]
	if h.tail[a] != h.tail[b] {
		return h.tail[a] > h.tail[b]
	}
	return a < b // the recipe's order among equals
}
func (h byTail) Swap(i, j int) { h.ks[i], h.ks[j] = h.ks[j], h.ks[i] }
func (h *byTail) Push(x any)   { h.ks = append(h.ks, x.(int)) }
func (h *byTail) Pop() any     { k := h.ks[len(h.ks)-1]; h.ks = h.ks[:len(h.ks)-1]; return k }

// PlanNodes writes the estimated wall time of the cells not done on nodes × cores, with the
// critical path.
func PlanNodes(w io.Writer, out string, cells []Cell, nodes, cores int) {
	s := Simulate(out, cells, nodes*cores)
	nodeWord := "nodes"
	if nodes == 1 {
		nodeWord = "node"
	}
	fmt.Fprintf(w, "on %d %s × %d cores (%d cells at once, one per core): %d cells to run, %s of one-core work, estimated %s wall (training at the step caps)\n",
		nodes, nodeWord, cores, s.Slots, s.Cells, recipe.Hours(s.Work), recipe.Hours(s.Wall))
	if len(s.Critical) > 0 {
		bound := "the number of cores bounds the wall time"
		if s.Path*float64(s.Slots) >= s.Work {
			bound = "the critical path bounds the wall time: more cores would not help"
		}
		fmt.Fprintf(w, "  critical path %s: %s; %s\n", recipe.Hours(s.Path), strings.Join(s.Critical, " → "), bound)
	}
}
