package server

// GET /metrics, in Prometheus's text format (github.com/prometheus/client_golang). Names follow
// Prometheus's conventions (a unit suffix, _total on counters) under the posformer_ prefix; the
// latency histograms are vLLM's (time to first token, time per output token). Each server has
// a registry of its own, so that tests can run several.

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

type metrics struct {
	registry        *prometheus.Registry
	requests        *prometheus.CounterVec
	promptTokens    prometheus.Counter
	generatedTokens prometheus.Counter
	ttft            prometheus.Histogram
	perToken        prometheus.Histogram
}

// newMetrics registers the server's metrics; queue depth and active slots are read from the
// scheduler when scraped (zero for an encoder).
func newMetrics(s *server) *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "posformer_requests_total",
			Help: "HTTP requests answered, by route and status code.",
		}, []string{"path", "status"}),
		promptTokens: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "posformer_prompt_tokens_total",
			Help: "Prompt tokens of the generation requests admitted.",
		}),
		generatedTokens: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "posformer_generated_tokens_total",
			Help: "Tokens generated.",
		}),
		// Buckets from a few milliseconds (a short prompt, idle server) to a minute (a long
		// queue): the spread a CPU server sees.
		ttft: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "posformer_time_to_first_token_seconds",
			Help:    "Time from a generation request's arrival to its first generated token, queueing and prefill included.",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}),
		perToken: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "posformer_time_per_output_token_seconds",
			Help:    "Time between successive generated tokens of a request.",
			Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5},
		}),
	}
	queued := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "posformer_queue_depth",
		Help: "Generation requests waiting for a free slot (--queue bounds it).",
	}, func() float64 {
		if s.sched == nil {
			return 0
		}
		return float64(s.sched.Queued())
	})
	active := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "posformer_active_slots",
		Help: "Slots running a request (--parallel bounds it).",
	}, func() float64 {
		if s.sched == nil {
			return 0
		}
		return float64(s.sched.Busy())
	})
	total := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "posformer_slots",
		Help: "Slots: requests decoded together (--parallel).",
	})
	total.Set(float64(s.cfg.parallel))
	m.registry.MustRegister(m.requests, m.promptTokens, m.generatedTokens, m.ttft, m.perToken, queued, active, total)
	return m
}

// handler serves the registry.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}
