// Typed calls to symfonic's HTTP API with openapi-fetch and the generated types.
// `tsc -p .` checks this file against symfonic-api.d.ts, so it stays true to the API.
import createClient from "openapi-fetch";
import type { components, paths } from "./symfonic-api";

type Pause = components["schemas"]["PauseView"];

// The key goes in a header, never in a URL.
export function symfonic(baseUrl: string, apiKey: string) {
  return createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${apiKey}` } });
}
type Api = ReturnType<typeof symfonic>;

// Every pause waiting for this key, page after page.
export async function waitingPauses(api: Api): Promise<Pause[]> {
  const pauses: Pause[] = [];
  let cursor: string | undefined;
  do {
    const { data, error } = await api.GET("/v1/pauses", {
      params: { query: { state: "pending", limit: 500, cursor } },
    });
    if (error) throw new Error(`${error.error.code}: ${error.error.message}`);
    pauses.push(...data.pauses);
    cursor = data.next_cursor ?? undefined;
  } while (cursor);
  return pauses;
}

// Approve one, and read the resumed turn's outcome as one JSON body.
export async function approve(api: Api, pause: Pause): Promise<string | null | undefined> {
  const { data, error } = await api.POST("/v1/resume", {
    body: {
      token: pause.token ?? "",
      answer: { decision: "approve" },
      args_digest: pause.args_digest,
    },
    headers: { Accept: "application/json" },
    parseAs: "json",
  });
  if (error) throw new Error(`${error.error.code}: ${error.error.message}`);
  return (data as components["schemas"]["TurnOutcome"]).answer;
}
