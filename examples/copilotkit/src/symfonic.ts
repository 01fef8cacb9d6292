// How the page finds symfonic, which conversation it shows, and the AG-UI agent
// that talks to `symfonic serve`'s POST /v1/agui.
import { HttpAgent, type RunAgentInput } from "@copilotkit/react-core/v2";

const KEY_STORAGE = "symfonic-api-key";

/** Where `symfonic serve` listens: `?server=` wins, then VITE_SYMFONIC_URL, then the default. */
export function serverUrl(): string {
  const given = new URLSearchParams(window.location.search).get("server");
  const url = given ?? import.meta.env.VITE_SYMFONIC_URL ?? "http://127.0.0.1:8000";
  return url.replace(/\/+$/, "");
}

/** The API key this tab signed in with ("" for a server without keys), or null. */
export function storedKey(): string | null {
  return window.sessionStorage.getItem(KEY_STORAGE);
}

export function storeKey(key: string | null): void {
  if (key === null) window.sessionStorage.removeItem(KEY_STORAGE);
  else window.sessionStorage.setItem(KEY_STORAGE, key);
}

/**
 * The conversation this page shows. A thread named in the URL (`?thread=`) is one
 * this page, or another tab, already used: it is restored from the server. A new
 * one enters the URL once its first run starts, so a reload finds it again.
 */
export function currentThread(): { threadId: string; known: boolean } {
  const given = new URLSearchParams(window.location.search).get("thread");
  if (given) return { threadId: given, known: true };
  return { threadId: crypto.randomUUID(), known: false };
}

export function rememberThread(threadId: string): void {
  const url = new URL(window.location.href);
  if (url.searchParams.get("thread") === threadId) return;
  url.searchParams.set("thread", threadId);
  window.history.replaceState(null, "", url);
}

/**
 * `HttpAgent` on symfonic's AG-UI endpoint, plus what CopilotKit calls when a chat
 * opens on a known thread (`connect`): a run with no message and no `resume`, which
 * symfonic answers with the thread's messages and its open interrupt, if any. That
 * is how a reloaded page gets its approval card back instead of an empty chat.
 */
export class SymfonicAgent extends HttpAgent {
  private readonly known: boolean;

  constructor(server: string, key: string, threadId: string, known: boolean) {
    super({
      url: `${server}/v1/agui`,
      headers: key ? { Authorization: `Bearer ${key}` } : {},
      threadId,
    });
    this.known = known;
  }

  connect(input: RunAgentInput) {
    if (!this.known) return super.connect(input); // a new thread has nothing to restore
    return this.run({ ...input, messages: [] });
  }
}
