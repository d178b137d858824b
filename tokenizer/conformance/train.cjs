// train.cjs trains a byte-level BPE vocabulary with Hugging Face's own trainer (the Rust
// `tokenizers` crate's BpeTrainer, through its Node bindings, the npm package `tokenizers`) and
// writes the tokenizer.json. The Go test TestTrainerConformance compares its merges with
// TrainBPE's.
//
// Usage: node train.cjs NODE_MODULES_DIR TEXT_FILE OUT_JSON
//
// The trainer is the model's default one (the bindings take no options): no special tokens,
// the bytes seen as its alphabet, 30,000 tokens at most. The alphabet sorted by code point and
// merges numbered in order, the ids keep the order of ours, so ties fall the same way.
"use strict";
const path = require("path");
const { createRequire } = require("module");

const [modulesDir, textPath, outPath] = process.argv.slice(2);
if (!modulesDir || !textPath || !outPath) {
  console.error("usage: node train.cjs NODE_MODULES_DIR TEXT_FILE OUT_JSON");
  process.exit(2);
}
const req = createRequire(path.join(path.resolve(modulesDir), "..", "package.json"));
const { Tokenizer, BPE, byteLevelPreTokenizer } = req("tokenizers");
const t = new Tokenizer(BPE.empty());
t.setPreTokenizer(byteLevelPreTokenizer(false, true)); // add_prefix_space false, GPT-2's regex
t.train([textPath]);
t.save(outPath, false);
