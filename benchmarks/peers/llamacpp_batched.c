// llamacpp_batched: batched greedy decoding speed of llama.cpp, as a peer for posformer's
// serving table (SPEED.md, "Serving"; servebatch/ is posformer's side).
//
// N streams (sequences 0..N-1 of one context with n_seq_max = N) each get a prompt of P tokens,
// all prefilled in one llama_batch; then every step decodes one llama_batch holding the last
// token of every stream, and each stream's next token is the argmax of its logits, never
// stopping at EOS. The aggregate rate is N*G generated tokens over the time from the prefill's
// start to the last step's logits. One untimed round first (llama.cpp reserves its compute
// buffers then), then REPS timed rounds, each on a cleared KV cache.
//
//   LLAMACPP_LIB_DIR=DIR llamacpp_batched MODEL.gguf N_STREAMS PROMPT GEN N_THREADS [REPS]
//
// Stream s's prompt is BOS then the ids 100+s, 101+s, ...: servebatch feeds the same ones.
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

static void add(struct llama_batch *b, llama_token tok, llama_pos pos, llama_seq_id seq, int logits) {
	int i = b->n_tokens++;
	b->token[i] = tok;
	b->pos[i] = pos;
	b->n_seq_id[i] = 1;
	b->seq_id[i][0] = seq;
	b->logits[i] = logits;
}

static int argmax(const float *x, int n) {
	int best = 0;
	for (int j = 1; j < n; j++)
		if (x[j] > x[best]) best = j;
	return best;
}

// round runs one prefill and gen steps over n streams and returns the seconds taken, or -1.
static double round_once(struct llama_context *ctx, int vocab, int n, int prompt, int gen,
                         struct llama_batch *b, llama_token *next) {
	llama_memory_clear(llama_get_memory(ctx), true);
	double start = now();
	b->n_tokens = 0;
	for (int s = 0; s < n; s++) {
		for (int k = 0; k < prompt; k++) {
			add(b, k == 0 ? 1 : 100 + s + k - 1, k, s, k == prompt - 1);
		}
	}
	if (llama_decode(ctx, *b) != 0) {
		fprintf(stderr, "llama_decode failed on the prompts\n");
		return -1;
	}
	for (int s = 0; s < n; s++) next[s] = argmax(llama_get_logits_ith(ctx, s * prompt + prompt - 1), vocab);
	// The first generated token comes from the prefill; gen-1 steps make the others.
	for (int step = 1; step < gen; step++) {
		b->n_tokens = 0;
		for (int s = 0; s < n; s++) add(b, next[s], prompt + step - 1, s, 1);
		if (llama_decode(ctx, *b) != 0) {
			fprintf(stderr, "llama_decode failed at step %d\n", step);
			return -1;
		}
		for (int s = 0; s < n; s++) next[s] = argmax(llama_get_logits_ith(ctx, s), vocab);
	}
	return now() - start;
}

int main(int argc, char **argv) {
	if (argc < 6) {
		fprintf(stderr, "usage: %s MODEL.gguf N_STREAMS PROMPT GEN N_THREADS [REPS]\n", argv[0]);
		return 2;
	}
	const char *path = argv[1];
	int n = atoi(argv[2]), prompt = atoi(argv[3]), gen = atoi(argv[4]), threads = atoi(argv[5]);
	int reps = argc > 6 ? atoi(argv[6]) : 1;
	if (n < 1 || prompt < 1 || gen < 1 || threads < 1 || reps < 1) {
		fprintf(stderr, "N_STREAMS, PROMPT, GEN, N_THREADS and REPS must be >= 1\n");
		return 2;
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
	struct llama_model_params mp = llama_model_default_params();
	struct llama_model *model = llama_model_load_from_file(path, mp);
	if (!model) {
		fprintf(stderr, "cannot load %s\n", path);
		return 1;
	}
	struct llama_context_params cp = llama_context_default_params();
	cp.n_seq_max = n;
	cp.n_ctx = n * (prompt + gen);        // split evenly between the streams (kv_unified off)
	cp.n_batch = n * prompt;              // every prompt in one batch
	cp.n_ubatch = n * prompt;
	cp.n_threads = threads;
	cp.n_threads_batch = threads;
	cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
	struct llama_context *ctx = llama_init_from_model(model, cp);
	if (!ctx) {
		fprintf(stderr, "cannot create a context of %d streams\n", n);
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
	struct llama_batch b = llama_batch_init(n * prompt, 0, 1);
	llama_token *next = malloc(sizeof(llama_token) * n);
	for (int r = 0; r <= reps; r++) {
		double secs = round_once(ctx, vocab, n, prompt, gen, &b, next);
		if (secs < 0) return 1;
		if (r > 0) printf("llama.cpp streams=%d prompt=%d gen=%d tok/s=%.1f\n", n, prompt, gen, n * gen / secs);
	}
	fprintf(stderr, "stream 0's last token: %d\n", next[0]);
	free(next);
	llama_batch_free(b);
	llama_free(ctx);
	llama_model_free(model);
	return 0;
}
