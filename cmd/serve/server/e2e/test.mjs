// End-to-end test of cmd/serve with OpenAI's official Node client. TestOpenAIClient
// (cmd/serve/e2e_test.go) starts two real servers on 127.0.0.1 (the shipped decoder and the
// shipped encoder), computes the expected answers with the Go engine on its own, and runs this
// script with:
//
//   POSFORMER_DECODER_URL, POSFORMER_ENCODER_URL   base URLs, http://127.0.0.1:PORT/v1
//   POSFORMER_EXPECT                               JSON: the requests and their expected answers
//
// Every check is an assertion; the script exits non-zero at the first failure.
import assert from "node:assert/strict";
import OpenAI from "openai";

const expect = JSON.parse(process.env.POSFORMER_EXPECT);
const client = (baseURL) => new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0, timeout: 60_000 });
const decoder = client(process.env.POSFORMER_DECODER_URL);
const encoder = client(process.env.POSFORMER_ENCODER_URL);
let checks = 0;
const check = (name, fn) => fn().then(() => { checks++; }, (err) => { err.message = `${name}: ${err.message}`; throw err; });

await check("models", async () => {
  const list = await decoder.models.list();
  assert.deepEqual(list.data.map((m) => m.id), [expect.decoder_id]);
  assert.equal(list.data[0].object, "model");
});

await check("completion", async () => {
  const c = expect.completion;
  const r = await decoder.completions.create({ model: expect.decoder_id, prompt: c.prompt, max_tokens: c.max_tokens, temperature: 0 });
  assert.equal(r.object, "text_completion");
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0].text, c.text);
  assert.equal(r.choices[0].finish_reason, c.finish_reason);
  assert.equal(r.usage.completion_tokens, c.completion_tokens);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
});

await check("completion stream", async () => {
  const c = expect.completion;
  const stream = await decoder.completions.create({ model: expect.decoder_id, prompt: c.prompt, max_tokens: c.max_tokens, temperature: 0, stream: true });
  let text = "", finish = null, chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    text += chunk.choices[0]?.text ?? "";
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  assert.ok(chunks > 1, `one token per chunk: got ${chunks} chunks`);
  assert.equal(text, c.text);
  assert.equal(finish, c.finish_reason);
});

await check("chat", async () => {
  const c = expect.chat;
  const r = await decoder.chat.completions.create({ model: expect.decoder_id, messages: c.messages, max_tokens: c.max_tokens, temperature: 0 });
  assert.equal(r.object, "chat.completion");
  assert.equal(r.choices[0].message.role, "assistant");
  assert.equal(r.choices[0].message.content, c.text);
  assert.equal(r.choices[0].finish_reason, c.finish_reason);
});

await check("chat stream", async () => {
  const c = expect.chat;
  const stream = await decoder.chat.completions.create({
    model: expect.decoder_id, messages: c.messages, max_tokens: c.max_tokens, temperature: 0,
    stream: true, stream_options: { include_usage: true },
  });
  let text = "", role = null, usage = null;
  for await (const chunk of stream) {
    assert.equal(chunk.object, "chat.completion.chunk");
    const d = chunk.choices[0]?.delta;
    role ??= d?.role ?? null;
    text += d?.content ?? "";
    usage = chunk.usage ?? usage;
  }
  assert.equal(role, "assistant");
  assert.equal(text, c.text);
  assert.equal(usage?.completion_tokens, c.completion_tokens);
});

await check("error object", async () => {
  await assert.rejects(
    decoder.completions.create({ model: expect.decoder_id, prompt: "x".repeat(expect.context + 1), max_tokens: 1 }),
    (err) => err instanceof OpenAI.BadRequestError && err.status === 400 && /context/.test(err.message) && err.code === "context_length_exceeded",
  );
});

await check("embeddings (the client's default base64)", async () => {
  const e = expect.embedding;
  const r = await encoder.embeddings.create({ model: expect.encoder_id, input: [e.input, "another input"] });
  assert.equal(r.data.length, 2);
  assert.equal(r.data[0].embedding.length, e.vector.length);
  // Float32 values, decoded by the client from base64, exactly the Go engine's.
  r.data[0].embedding.forEach((v, i) => assert.equal(v, Math.fround(e.vector[i]), `component ${i}`));
  assert.notDeepEqual(r.data[0].embedding, r.data[1].embedding);
});

await check("embeddings as floats", async () => {
  const e = expect.embedding;
  const r = await encoder.embeddings.create({ model: expect.encoder_id, input: [e.input, "another input"], encoding_format: "float" });
  r.data[0].embedding.forEach((v, i) => assert.equal(Math.fround(v), Math.fround(e.vector[i]), `component ${i}`));
  assert.equal(r.usage.prompt_tokens, e.tokens);
  assert.equal(r.data[1].index, 1);
});

console.log(`ok: ${checks} checks`);
