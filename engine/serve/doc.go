// Package serve runs many generation requests on one engine at once, for a server: continuous
// batching over the engine's sessions, and embeddings for encoders.
//
// Continuous batching: a Scheduler gives each request a row of a batched engine.Session for as
// long as the request runs, and every step decodes one token for every running request in one
// batched Append: one pass over the weights for all of them, where serving them one after the
// other would take one pass each (benchmarks/SERVE.md). Requests do not wait for a whole batch
// to finish: one that arrives joins at the next step, and one that ends (a stop
// token, its length, its client gone) gives its row back before the next step, as vLLM and
// llama.cpp's server do. The Scheduler speaks tokens only; text, stop strings and the wire
// format are the caller's (cmd/serve's OpenAI-compatible handlers).
//
// An Embedder computes the mean of an encoder's last hidden state over each input's tokens,
// one request at a time.
package serve
