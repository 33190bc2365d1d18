// Streams a chat completion and a response from a live thinkwire server with
// the official `openai` Node SDK, whose stream parsers must accept both
// without error. Prints a JSON summary on stdout.
//
// Usage: node openai-client.mjs BASE_URL [--visibility full]
import OpenAI from "openai";

const [baseURL, ...rest] = process.argv.slice(2);
const visibility = rest[rest.indexOf("--visibility") + 1] ?? "full";
const client = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0 });
const prompt = "What is the capital of France?";

const chat = { reasoning: "", content: "", details: 0, finish: null, usage: null };
const stream = await client.chat.completions.create({
  model: "thinkwire",
  messages: [{ role: "user", content: prompt }],
  stream: true,
  stream_options: { include_usage: true },
  temperature: 0,
  reasoning: { visibility },
});
for await (const chunk of stream) {
  if (chunk.usage) chat.usage = chunk.usage;
  for (const choice of chunk.choices) {
    chat.reasoning += choice.delta.reasoning_content ?? "";
    chat.content += choice.delta.content ?? "";
    chat.details += (choice.delta.reasoning_details ?? []).length;
    if (choice.finish_reason) chat.finish = choice.finish_reason;
  }
}

const responses = { events: [], reasoning: "", content: "", output: [] };
const events = await client.responses.create({
  model: "thinkwire",
  input: prompt,
  stream: true,
  store: false,
  include: ["reasoning.encrypted_content"],
  temperature: 0,
  reasoning: { visibility },
});
for await (const event of events) {
  responses.events.push(event.type);
  if (event.type === "response.reasoning_text.delta") responses.reasoning += event.delta;
  if (event.type === "response.output_text.delta") responses.content += event.delta;
  // `incomplete`: the token limit cut the answer off.
  if (event.type === "response.completed" || event.type === "response.incomplete") {
    responses.output = event.response.output;
  }
}

// The SDK's own stream helper rebuilds the response from the events and
// throws on any it cannot place.
const helper = client.responses.stream({
  model: "thinkwire",
  input: prompt,
  store: false,
  include: ["reasoning.encrypted_content"],
  temperature: 0,
  reasoning: { visibility },
});
const final = await helper.finalResponse();

console.log(JSON.stringify({ chat, responses, helper: { output_text: final.output_text } }));
