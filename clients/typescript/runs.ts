// Runs that outlive their connection (docs/runs.md): start a turn or a resume in the
// background, read a run, follow its events from any worker, cancel it.
// `tsc -p .` checks this file against symfonic-api.d.ts, so it stays true to the API.
import type createClient from "openapi-fetch";
import type { components, paths } from "./symfonic-api";

type Schemas = components["schemas"];
export type Api = ReturnType<typeof createClient<paths>>;
export type RunStarted = Schemas["RunStarted"];
export type Run = Schemas["RunView"];
export type TurnOutcome = Schemas["TurnOutcome"];

// A run's events: the turn stream's own, each with its number in the run (its SSE `id:`).
export type RunEvent = { id: string } & (
  | { type: "turn.started"; data: Schemas["TurnStartedEvent"] }
  | { type: "text.delta"; data: Schemas["TextDeltaEvent"] }
  | { type: "tool.call"; data: Schemas["ToolCallEvent"] }
  | { type: "tool.result"; data: Schemas["ToolResultEvent"] }
  | { type: "turn.paused"; data: Schemas["TurnPausedEvent"] }
  | { type: "response.complete"; data: Schemas["ResponseCompleteEvent"] }
  | { type: "error"; data: Schemas["ErrorEvent"] }
);
const TERMINAL = new Set(["turn.paused", "response.complete", "error"]);

// A refusal: the service's status and its stable code (`run_not_found`, `too_many_streams`, ...).
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly retryAfter: number | null = null,
  ) {
    super(`${status} ${code}: ${message}`);
  }
}

function refused(response: Response, error: unknown): ApiError {
  const detail = (error as Schemas["ErrorResponse"] | undefined)?.error;
  const after = response.headers.get("Retry-After");
  return new ApiError(
    response.status,
    detail?.code ?? "http_error",
    detail?.message ?? response.statusText,
    after === null ? null : Number(after),
  );
}

// Start a turn that runs whether or not anyone listens; every refusal is thrown here.
export async function startTurn(
  api: Api,
  sessionId: string,
  message: string,
  options: Omit<Schemas["TurnRequest"], "message" | "background"> = {},
): Promise<RunStarted> {
  const { data, error, response } = await api.POST("/v1/sessions/{session_id}/turns", {
    params: { path: { session_id: sessionId } },
    body: { message, background: true, ...options },
  });
  if (error !== undefined || response.status !== 202) throw refused(response, error);
  return data as unknown as RunStarted;
}

// Answer a pause and run its turn on in the background; the claim is decided before this
// returns. An approval only counted toward a pause that needs several starts no run: its
// `TurnOutcome` (status `paused`) is returned instead.
export async function startResume(
  api: Api,
  token: string,
  answer: Schemas["ResumeRequest"]["answer"],
  options: Omit<Schemas["ResumeRequest"], "token" | "answer" | "background"> = {},
): Promise<RunStarted | TurnOutcome> {
  const { data, error, response } = await api.POST("/v1/resume", {
    body: { token, answer, background: true, ...options },
  });
  if (error !== undefined || response.status !== 202) throw refused(response, error);
  return data as RunStarted | TurnOutcome;
}

export function isRunStarted(started: RunStarted | TurnOutcome): started is RunStarted {
  return "run_id" in started;
}

// A run's state, its outcome once it ended, and its session (404 `run_not_found` for
// another principal's run, as for one nobody made).
export async function getRun(api: Api, runId: string): Promise<Run> {
  const { data, error, response } = await api.GET("/v1/runs/{run_id}", {
    params: { path: { run_id: runId } },
  });
  if (error !== undefined) throw refused(response, error);
  return data;
}

// Cancel a run on whichever worker runs it: it publishes nothing, a resume's pause is
// abandoned. 409 `run_not_running` once it ended or its turn settled.
export async function cancelRun(api: Api, runId: string): Promise<Run> {
  const { data, error, response } = await api.POST("/v1/runs/{run_id}/cancel", {
    params: { path: { run_id: runId } },
  });
  if (error !== undefined) throw refused(response, error);
  return data;
}

// A run's events from the first (or after `lastEventId`) to its terminal one, on any
// worker. A dropped connection is reopened with `Last-Event-ID` set to the last `id:`
// read, so each event arrives once; after `attempts` failures in a row (or a refusal
// that waiting does not cure) the last error is thrown. Leaving the loop stops
// following, never the run.
export async function* followRun(
  api: Api,
  runId: string,
  options: { lastEventId?: string; attempts?: number } = {},
): AsyncGenerator<RunEvent> {
  let lastEventId = options.lastEventId;
  let failures = 0;
  for (;;) {
    try {
      for await (const event of runEventsOnce(api, runId, lastEventId, () => (failures = 0))) {
        lastEventId = event.id;
        yield event;
        if (TERMINAL.has(event.type)) return;
      }
      throw new Error("the service ended the run's events early");
    } catch (error) {
      const passing = !(error instanceof ApiError) || [429, 503].includes(error.status);
      if (!passing || ++failures >= (options.attempts ?? 5)) throw error;
      const wait = error instanceof ApiError && error.retryAfter !== null
        ? error.retryAfter * 1000
        : 500 * 2 ** (failures - 1);
      await new Promise((resolve) => setTimeout(resolve, Math.min(wait, 10_000)));
    }
  }
}

async function* runEventsOnce(
  api: Api,
  runId: string,
  lastEventId: string | undefined,
  connected: () => void,
): AsyncGenerator<RunEvent> {
  const { data, error, response } = await api.GET("/v1/runs/{run_id}/events", {
    params: {
      path: { run_id: runId },
      header: lastEventId === undefined ? {} : { "last-event-id": lastEventId },
    },
    headers: { Accept: "text/event-stream" },
    parseAs: "stream",
  });
  if (error !== undefined || !data) throw refused(response, error);
  connected();
  yield* frames(data as ReadableStream<Uint8Array>);
}

// The frames of an SSE body: `event:`, `data:` and `id:` lines up to a blank line;
// comments (keep-alives) skipped. A frame cut short by a dropped connection is not one.
async function* frames(body: ReadableStream<Uint8Array>): AsyncGenerator<RunEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffered = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffered += decoder.decode(value, { stream: true });
      let end: number;
      while ((end = buffered.search(/\r?\n\r?\n/)) >= 0) {
        const block = buffered.slice(0, end);
        buffered = buffered.slice(end).replace(/^\r?\n\r?\n/, "");
        const frame = parsed(block);
        if (frame !== null) yield frame;
      }
    }
  } finally {
    await reader.cancel().catch(() => undefined); // closes the connection when left early
  }
}

function parsed(block: string): RunEvent | null {
  const fields: Record<string, string[]> = {};
  for (const line of block.split(/\r?\n/)) {
    if (line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const name = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    (fields[name] ??= []).push(value);
  }
  if (!fields.event || !fields.data || !fields.id) return null;
  return {
    type: fields.event[0],
    id: fields.id[0],
    data: JSON.parse(fields.data.join("\n")),
  } as RunEvent;
}
