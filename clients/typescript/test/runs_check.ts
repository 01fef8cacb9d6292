// Drives runs.ts against a real `symfonic serve` serving the workers'
// agent; prints what it saw as one JSON object for tests/client/test_typescript_runs.py.
import createClient from "openapi-fetch";
import type { paths } from "../symfonic-api";
import {
  ApiError,
  cancelRun,
  followRun,
  getRun,
  isRunStarted,
  startResume,
  startTurn,
  type Api,
  type RunEvent,
} from "../runs.js";

declare const process: { argv: string[] };
const [baseUrl, apiKey] = process.argv.slice(2);

function api(fetch?: (input: Request) => Promise<Response>): Api {
  return createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${apiKey}` }, fetch });
}

async function all(events: AsyncGenerator<RunEvent>): Promise<RunEvent[]> {
  const seen: RunEvent[] = [];
  for await (const event of events) seen.push(event);
  return seen;
}

async function code(call: Promise<unknown>): Promise<string> {
  try {
    await call;
    return "none";
  } catch (error) {
    return error instanceof ApiError ? `${error.status} ${error.code}` : String(error);
  }
}

async function newSession(client: Api): Promise<string> {
  const { data } = await client.POST("/v1/sessions", { body: {} });
  return data!.session_id;
}

// A paused turn, its replay after id 1, and its resume followed to the end.
async function pauseAndResume(client: Api) {
  const started = await startTurn(client, await newSession(client), "ask which colour?");
  const paused = await all(followRun(client, started.run_id));
  const last = paused[paused.length - 1];
  const afterFirst = await all(followRun(client, started.run_id, { lastEventId: "1" }));
  const token = last.type === "turn.paused" ? (last.data.token ?? "") : "";
  const resumed = await startResume(client, token, "blue");
  if (!isRunStarted(resumed)) throw new Error("the resume started no run");
  const finished = await all(followRun(client, resumed.run_id));
  const repeated = await startResume(client, token, "blue");
  return {
    paused: paused.map((e) => [e.id, e.type]),
    pausedRun: (await getRun(client, started.run_id)).state,
    afterFirst: afterFirst.map((e) => e.id),
    resumed: finished.map((e) => e.type),
    answer: (await getRun(client, resumed.run_id)).outcome?.answer,
    repeatIsTheSameRun: isRunStarted(repeated) && repeated.run_id === resumed.run_id,
  };
}

// The first events request drops after its first frame: the follower reconnects.
async function dropped() {
  const asked: (string | null)[] = [];
  const flaky = async (request: Request): Promise<Response> => {
    const response = await fetch(request);
    if (!request.url.endsWith("/events")) return response;
    asked.push(request.headers.get("Last-Event-ID"));
    if (asked.length > 1) return response;
    const reader = response.body!.getReader();
    let text = "";
    while (!text.includes("\n\n")) text += new TextDecoder().decode((await reader.read()).value);
    await reader.cancel();
    let pulls = 0;
    const cut = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (pulls++ === 0) {
          controller.enqueue(new TextEncoder().encode(text.slice(0, text.indexOf("\n\n") + 2)));
        } else {
          controller.error(new TypeError("the connection dropped")); // after the first frame
        }
      },
    });
    return new Response(cut, { status: 200, headers: response.headers });
  };
  const client = api(flaky);
  const started = await startTurn(client, await newSession(client), "ask which size?");
  const seen = await all(followRun(client, started.run_id));
  return { ids: seen.map((e) => e.id), asked };
}

// A turn whose tool would take an hour, cancelled once its tool call is kept.
async function cancelled(client: Api) {
  const started = await startTurn(client, await newSession(client), "busy with the report");
  const seen: RunEvent[] = [];
  for await (const event of followRun(client, started.run_id)) {
    seen.push(event);
    if (event.type === "tool.call") break;
  }
  const run = await cancelRun(client, started.run_id);
  const rest = await all(followRun(client, started.run_id, { lastEventId: seen[seen.length - 1].id }));
  return {
    state: run.state,
    events: [...seen, ...rest].map((e) => e.type),
    last: rest.length ? rest[rest.length - 1].data : null,
    again: await code(cancelRun(client, started.run_id)),
    unknown: await code(getRun(client, "run-nobody-made")),
  };
}

const client = api();
console.log(
  JSON.stringify({
    pauseAndResume: await pauseAndResume(client),
    dropped: await dropped(),
    cancelled: await cancelled(client),
  }),
);
