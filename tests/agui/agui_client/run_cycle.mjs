// Drives symfonic's POST /v1/agui with the official AG-UI client (@ag-ui/client):
// a run that pauses for approval, a stranger's run answered with the thread's state
// (its messages and the open interrupt, not its own message) while it is pending,
// the resume that answers it, and an identical resume replayed. Prints what the
// client saw as one JSON document on stdout, for the Python test to check.
//
// Usage: AGUI_BASE_URL=http://127.0.0.1:8000 AGUI_API_KEY=key node run_cycle.mjs
import { HttpAgent, buildResumeArray, randomUUID } from "@ag-ui/client";
import { AgentCapabilitiesSchema } from "@ag-ui/core/schemas";

const base = process.env.AGUI_BASE_URL;
const headers = { Authorization: `Bearer ${process.env.AGUI_API_KEY}` };
const threadId = randomUUID();

function recorder() {
  const events = [];
  return { events, subscriber: { onEvent: ({ event }) => void events.push(event) } };
}

async function run(agent, parameters) {
  const { events, subscriber } = recorder();
  try {
    const { result } = await agent.runAgent(parameters, subscriber);
    return { events, result, error: null };
  } catch (error) {
    return { events, result: null, error: String(error?.message ?? error) };
  }
}

const response = await fetch(`${base}/v1/agui/capabilities`, { headers });
const capabilities = AgentCapabilitiesSchema.parse(await response.json());

const agent = new HttpAgent({ url: `${base}/v1/agui`, headers, threadId });
agent.addMessage({ id: randomUUID(), role: "user", content: "Pay alice 42 EUR for the design work" });
const first = await run(agent, {});
const interrupts = structuredClone(agent.pendingInterrupts);

// Another client on the same thread that knows nothing of the interrupt.
const stranger = new HttpAgent({ url: `${base}/v1/agui`, headers, threadId });
stranger.addMessage({ id: randomUUID(), role: "user", content: "Pay bob 1 EUR" });
const refused = await run(stranger, {});
const strangerInterrupts = structuredClone(stranger.pendingInterrupts);
const strangerMessages = structuredClone(stranger.messages);

const answers = Object.fromEntries(
  interrupts.map((i) => [i.id, { status: "resolved", payload: { approved: true } }]),
);
const resume = buildResumeArray(interrupts, answers);
const second = await run(agent, { resume });
const pendingAfter = agent.pendingInterrupts.length;
const replay = await run(agent, { resume });

console.log(JSON.stringify({
  capabilities, threadId, first, interrupts, refused, strangerInterrupts, strangerMessages,
  second, pendingAfter, replay,
  messages: agent.messages,
}));
