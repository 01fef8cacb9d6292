import { useEffect, useMemo, useState, type FormEvent } from "react";
import {
  CopilotChat,
  CopilotKitProvider,
  useAgent,
  useDefaultRenderTool,
  useInterrupt,
} from "@copilotkit/react-core/v2";
import { InterruptCard } from "./InterruptCard";
import {
  SymfonicAgent,
  currentThread,
  rememberThread,
  serverUrl,
  storeKey,
  storedKey,
} from "./symfonic";

export function App() {
  const server = serverUrl();
  const [key, setKey] = useState(storedKey);
  return (
    <div className="page">
      <header>
        <h1>symfonic × CopilotKit</h1>
        <p>
          A payments assistant that asks before it pays, on <code>{server}</code>.{" "}
          {key !== null && (
            <button type="button" className="link" onClick={() => (storeKey(null), setKey(null))}>
              Sign out
            </button>
          )}
        </p>
      </header>
      {key === null ? (
        <SignIn onSignIn={(given) => (storeKey(given), setKey(given))} />
      ) : (
        <Conversation server={server} apiKey={key} />
      )}
    </div>
  );
}

function SignIn({ onSignIn }: { onSignIn: (key: string) => void }) {
  const [value, setValue] = useState("");
  const submit = (event: FormEvent) => {
    event.preventDefault();
    onSignIn(value.trim());
  };
  return (
    <form className="signin" onSubmit={submit}>
      <label>
        API key
        <input type="password" value={value} onChange={(e) => setValue(e.target.value)} />
      </label>
      <button type="submit">Sign in</button>
      <p className="hint">Leave it empty for a server started without SYMFONIC_API_KEYS.</p>
    </form>
  );
}

function Conversation({ server, apiKey }: { server: string; apiKey: string }) {
  const [{ threadId, known }] = useState(currentThread);
  const agent = useMemo(
    () => new SymfonicAgent(server, apiKey, threadId, known),
    [server, apiKey, threadId, known],
  );
  return (
    <CopilotKitProvider selfManagedAgents={{ default: agent }} enableInspector={false}>
      <main>
        <Interrupts />
        <ToolCalls />
        <RememberThread threadId={threadId} />
        <CopilotChat
          threadId={threadId}
          labels={{ chatInputPlaceholder: "Try: Pay alice 42 EUR for the design work" }}
        />
      </main>
      <footer>
        <a href={newConversationHref()}>New conversation</a>
      </footer>
    </CopilotKitProvider>
  );
}

function newConversationHref(): string {
  const url = new URL(window.location.href);
  url.searchParams.delete("thread");
  return url.toString();
}

/** The open interrupt, drawn as a card in the chat, answered with `resolve`. */
function Interrupts() {
  const { agent } = useAgent();
  useInterrupt({
    render: ({ interrupt, resolve }) =>
      interrupt ? (
        // Keyed by the interrupt: the next question gets a fresh card, not this one's state.
        <InterruptCard
          key={interrupt.id}
          interrupt={interrupt}
          messages={agent.messages}
          resolve={resolve}
        />
      ) : (
        <></>
      ),
  });
  return null;
}

/** Each tool call as one line in the chat: its name, then its result once it has one. */
function ToolCalls() {
  useDefaultRenderTool({
    render: ({ name, status, result }) => (
      <div className="tool" data-tool={name}>
        <code>{name}</code> {status === "complete" ? result : "…"}
      </div>
    ),
  });
  return null;
}

/** Put the thread in the URL once it exists on the server, so a reload finds it again. */
function RememberThread({ threadId }: { threadId: string }) {
  const { agent } = useAgent({ updates: [] });
  useEffect(() => {
    const { unsubscribe } = agent.subscribe({ onRunStartedEvent: () => rememberThread(threadId) });
    return unsubscribe;
  }, [agent, threadId]);
  return null;
}
