// llamacpp_decode: greedy decoding speed of llama.cpp, as a peer for posformer's SPEED.md.
//
// Loads a GGUF model, optionally quantizes it to Q8_0 first, attaches one CPU thread pool for the
// whole run (so that no step pays for starting threads), turns flash attention off, feeds BOS
// and then each greedy token one llama_decode call at a time, never stopping at EOS/BOS, and
// prints the ids and the decode rate from the second token on (as run.c and cmd/infer count).
//
//   LLAMACPP_LIB_DIR=DIR llamacpp_decode MODEL.gguf N_TOKENS N_THREADS [--q8 OUT.gguf] [--prompt P]
//
// --prompt P first feeds a prompt of P tokens (ids 100, 101, ...; cmd/infer takes the same with
// --prompt-ids) in one llama_decode call, as a prefill, twice (the cache cleared in between) and
// prints both rates ("first prefill tok/s", "prefill tok/s"); the greedy tokens then follow it.
//
// Built against the prebuilt libraries of the node-llama-cpp npm package (see README.md here).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "llama.h"

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void quiet(enum ggml_log_level level, const char *text, void *data) {
	(void)data;
	if (level >= GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

int main(int argc, char **argv) {
	if (argc < 4) {
		fprintf(stderr, "usage: %s MODEL.gguf N_TOKENS N_THREADS [--q8 OUT.gguf] [--prompt P]\n", argv[0]);
		return 2;
	}
	const char *path = argv[1], *q8out = NULL;
	int n = atoi(argv[2]), threads = atoi(argv[3]), prompt = 0;
	for (int i = 4; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--q8") == 0) {
			q8out = argv[i + 1];
		} else if (strcmp(argv[i], "--prompt") == 0) {
			prompt = atoi(argv[i + 1]);
		} else {
			fprintf(stderr, "unknown option %s (valid: --q8 OUT.gguf, --prompt P)\n", argv[i]);
			return 2;
		}
	}
	llama_log_set(quiet, NULL);
	// The CPU backends are shared libraries chosen at run time (one per instruction set).
	const char *dir = getenv("LLAMACPP_LIB_DIR");
	if (dir) {
		ggml_backend_load_all_from_path(dir);
	} else {
		ggml_backend_load_all();
	}
	llama_backend_init();
	if (q8out) {
		struct llama_model_quantize_params qp = llama_model_quantize_default_params();
		qp.ftype = LLAMA_FTYPE_MOSTLY_Q8_0;
		qp.nthread = threads;
		if (llama_model_quantize(path, q8out, &qp) != 0) {
			fprintf(stderr, "quantizing %s failed\n", path);
			return 1;
		}
		path = q8out;
	}
	struct llama_model_params mp = llama_model_default_params();
	struct llama_model *model = llama_model_load_from_file(path, mp);
	if (!model) {
		fprintf(stderr, "cannot load %s\n", path);
		return 1;
	}
	struct llama_context_params cp = llama_context_default_params();
	cp.n_ctx = prompt + n + 8;
	cp.n_batch = prompt > 1 ? prompt : 1;
	cp.n_ubatch = cp.n_batch;
	cp.n_threads = threads;
	cp.n_threads_batch = threads;
	cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
	struct llama_context *ctx = llama_init_from_model(model, cp);
	if (!ctx) {
		fprintf(stderr, "cannot create a context\n");
		return 1;
	}
	ggml_backend_reg_t reg = ggml_backend_reg_by_name("CPU");
	typedef struct ggml_threadpool *(*tp_new_fn)(struct ggml_threadpool_params *);
	tp_new_fn tp_new = reg ? (tp_new_fn)ggml_backend_reg_get_proc_address(reg, "ggml_threadpool_new") : NULL;
	if (!tp_new) {
		fprintf(stderr, "the CPU backend does not export ggml_threadpool_new\n");
		return 1;
	}
	struct ggml_threadpool_params tpp = ggml_threadpool_params_default(threads);
	struct ggml_threadpool *tp = tp_new(&tpp);
	llama_attach_threadpool(ctx, tp, tp);

	int vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
	llama_token tok = 1; // BOS
	if (prompt > 0) {
		llama_token *ids = malloc(prompt * sizeof *ids);
		for (int i = 0; i < prompt; i++) ids[i] = (100 + i) % vocab;
		// A first prefill, cleared, warms what the first call sets up (llama-bench does too).
		for (int rep = 0; rep < 2; rep++) {
			if (rep == 1) llama_memory_clear(llama_get_memory(ctx), true);
			double t0 = now();
			if (llama_decode(ctx, llama_batch_get_one(ids, prompt)) != 0) {
				fprintf(stderr, "llama_decode of the prompt failed\n");
				return 1;
			}
			fprintf(stderr, "%s tok/s: %f (%d tokens)\n", rep == 0 ? "first prefill" : "prefill", prompt / (now() - t0), prompt);
		}
		const float *logits = llama_get_logits_ith(ctx, -1);
		int best = 0;
		for (int j = 1; j < vocab; j++)
			if (logits[j] > logits[best]) best = j;
		tok = best;
		free(ids);
	}
	double start = 0;
	for (int i = 0; i < n; i++) {
		if (i == 1) start = now();
		if (llama_decode(ctx, llama_batch_get_one(&tok, 1)) != 0) {
			fprintf(stderr, "llama_decode failed at step %d\n", i);
			return 1;
		}
		const float *logits = llama_get_logits_ith(ctx, -1);
		int best = 0;
		for (int j = 1; j < vocab; j++)
			if (logits[j] > logits[best]) best = j;
		tok = best;
		printf("%d ", tok);
	}
	double secs = now() - start;
	printf("\n");
	if (n > 1) fprintf(stderr, "achieved tok/s: %f\n", (n - 1) / secs);
	llama_free(ctx);
	llama_model_free(model);
	return 0;
}
