// The card for one open interrupt: an approval (Approve, Edit, Reject) or a question
// (a text answer, or a form drawn from the interrupt's JSON schema).
import { useState, type FormEvent, type ReactNode } from "react";
import type { Interrupt, Message } from "@copilotkit/react-core/v2";

type Schema = {
  type?: string;
  title?: string;
  description?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  enum?: unknown[];
  default?: unknown;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  items?: Schema;
  $ref?: string;
  $defs?: Record<string, Schema>;
  anyOf?: Schema[];
  oneOf?: Schema[];
};

type Resolve = (payload?: unknown) => Promise<unknown>;

export function InterruptCard(props: {
  interrupt: Interrupt;
  messages: Message[];
  resolve: Resolve;
}) {
  const { interrupt, messages, resolve } = props;
  const [sending, setSending] = useState(false);
  const send = (payload: unknown) => {
    setSending(true);
    resolve(payload).catch(() => setSending(false));
  };
  const approval = interrupt.reason === "tool_call";
  const waiting = waitingFor(interrupt);
  return (
    <section
      className="card"
      aria-label={approval ? "Approval" : "Question"}
      data-interrupt-reason={interrupt.reason}
    >
      <h2>{interrupt.message ?? "The assistant needs your answer"}</h2>
      {approval ? (
        <Approval interrupt={interrupt} messages={messages} send={send} sending={sending} waiting={waiting} />
      ) : waiting === null ? (
        <Answer schema={(interrupt.responseSchema ?? {}) as Schema} send={send} sending={sending} />
      ) : (
        <Waiting audience={waiting} />
      )}
    </section>
  );
}

/**
 * Who the interrupt waits for when the signed-in principal may not answer it, else null.
 * symfonic says so on every interrupt (`metadata.symfonic.answerable`): a pause asked
 * of an audience this principal is not in, or handed to one since.
 */
function waitingFor(interrupt: Interrupt): string | null {
  const symfonic = (interrupt.metadata as { symfonic?: { audience?: string | null; answerable?: boolean } } | undefined)
    ?.symfonic;
  if (symfonic?.answerable !== false) return null;
  return symfonic.audience ?? "the person who asked";
}

function Waiting({ audience }: { audience: string }) {
  return (
    <p className="waiting" role="status">
      Waiting for {audience}
    </p>
  );
}

type Sender = { send: (payload: unknown) => void; sending: boolean };

function Approval({ interrupt, messages, send, sending, waiting }: Sender & {
  interrupt: Interrupt;
  messages: Message[];
  waiting: string | null;
}) {
  const [mode, setMode] = useState<"ask" | "edit" | "reject">("ask");
  const [reason, setReason] = useState("");
  const call = toolCall(messages, interrupt.toolCallId);
  const args = call ? parsed(call.function.arguments) : {};
  const editable = editSchema(interrupt.responseSchema as Schema | undefined);
  return (
    <>
      <dl className="args">
        {Object.entries(args).map(([name, value]) => (
          <div key={name}>
            <dt>{name}</dt>
            <dd>{typeof value === "string" ? value : JSON.stringify(value)}</dd>
          </div>
        ))}
      </dl>
      {waiting !== null && <Waiting audience={waiting} />}
      {waiting === null && mode === "ask" && (
        <div className="actions">
          <button type="button" disabled={sending} onClick={() => send({ approved: true })}>
            Approve
          </button>
          {editable && (
            <button type="button" className="secondary" disabled={sending} onClick={() => setMode("edit")}>
              Edit
            </button>
          )}
          <button type="button" className="danger" disabled={sending} onClick={() => setMode("reject")}>
            Reject
          </button>
        </div>
      )}
      {waiting === null && mode === "edit" && editable && (
        <SchemaForm
          schema={editable}
          values={args}
          submitLabel="Approve with these values"
          sending={sending}
          onSubmit={(edited) => send({ approved: true, editedArgs: edited })}
          onCancel={() => setMode("ask")}
        />
      )}
      {waiting === null && mode === "reject" && (
        <form
          className="form"
          onSubmit={(event) => {
            event.preventDefault();
            send(reason.trim() ? { approved: false, reason: reason.trim() } : { approved: false });
          }}
        >
          <label>
            Reason (optional)
            <input value={reason} onChange={(e) => setReason(e.target.value)} />
          </label>
          <div className="actions">
            <button type="submit" className="danger" disabled={sending}>
              Reject
            </button>
            <button type="button" className="secondary" disabled={sending} onClick={() => setMode("ask")}>
              Back
            </button>
          </div>
        </form>
      )}
    </>
  );
}

function Answer({ schema, send, sending }: Sender & { schema: Schema }) {
  const [text, setText] = useState("");
  if (schema.type === "object" && schema.properties) {
    return <SchemaForm schema={schema} values={{}} submitLabel="Send" sending={sending} onSubmit={send} />;
  }
  return (
    <form
      className="form"
      onSubmit={(event) => {
        event.preventDefault();
        send(text);
      }}
    >
      <label>
        Your answer
        <input required value={text} onChange={(e) => setText(e.target.value)} />
      </label>
      <div className="actions">
        <button type="submit" disabled={sending}>
          Send
        </button>
      </div>
    </form>
  );
}

/** A form for an object schema; the browser checks `required`, `pattern` and ranges. */
function SchemaForm(props: {
  schema: Schema;
  values: Record<string, unknown>;
  submitLabel: string;
  sending: boolean;
  onSubmit: (value: Record<string, unknown>) => void;
  onCancel?: () => void;
}) {
  const { schema, values, submitLabel, sending, onSubmit, onCancel } = props;
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    onSubmit(collect(schema, schema, event.currentTarget, ""));
  };
  return (
    <form className="form" onSubmit={submit}>
      {fields(schema, schema, values, "")}
      <div className="actions">
        <button type="submit" disabled={sending}>
          {submitLabel}
        </button>
        {onCancel && (
          <button type="button" className="secondary" disabled={sending} onClick={onCancel}>
            Back
          </button>
        )}
      </div>
    </form>
  );
}

function fields(root: Schema, schema: Schema, values: Record<string, unknown>, prefix: string): ReactNode[] {
  const required = new Set(schema.required ?? []);
  return Object.entries(schema.properties ?? {}).map(([name, raw]) => {
    const field = resolved(root, raw);
    const path = prefix + name;
    const label = field.title ?? name;
    const value = values[name] ?? field.default;
    if (field.type === "object") {
      return (
        <fieldset key={path}>
          <legend>{label}</legend>
          {fields(root, field, (value ?? {}) as Record<string, unknown>, `${path}.`)}
        </fieldset>
      );
    }
    return (
      <label key={path}>
        {label}
        {input(field, path, value, required.has(name))}
        {field.description && <small>{field.description}</small>}
      </label>
    );
  });
}

function input(field: Schema, path: string, value: unknown, required: boolean): ReactNode {
  if (field.enum) {
    return (
      <select name={path} required={required} defaultValue={value === undefined ? "" : String(value)}>
        {!required && <option value="" />}
        {field.enum.map((option) => (
          <option key={String(option)} value={String(option)}>
            {String(option)}
          </option>
        ))}
      </select>
    );
  }
  if (field.type === "boolean") {
    return <input type="checkbox" name={path} defaultChecked={value === true} />;
  }
  if (field.type === "number" || field.type === "integer") {
    return (
      <input
        type="number"
        name={path}
        required={required}
        step={field.type === "integer" ? 1 : "any"}
        min={field.minimum}
        max={field.maximum}
        defaultValue={value === undefined ? "" : String(value)}
      />
    );
  }
  if (field.type === "array") {
    const lines = Array.isArray(value) ? value.join("\n") : "";
    return <textarea name={path} rows={2} defaultValue={lines} placeholder="One per line" />;
  }
  return (
    <input
      name={path}
      required={required}
      pattern={field.pattern ? field.pattern.replace(/^\^/, "").replace(/\$$/, "") : undefined}
      minLength={field.minLength}
      defaultValue={value === undefined ? "" : String(value)}
    />
  );
}

function collect(root: Schema, schema: Schema, form: HTMLFormElement, prefix: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, raw] of Object.entries(schema.properties ?? {})) {
    const field = resolved(root, raw);
    const path = prefix + name;
    if (field.type === "object") {
      out[name] = collect(root, field, form, `${path}.`);
      continue;
    }
    const element = form.elements.namedItem(path) as HTMLInputElement | null;
    if (element === null) continue;
    if (field.type === "boolean") out[name] = element.checked;
    else if (field.type === "number" || field.type === "integer") {
      if (element.value !== "") out[name] = Number(element.value);
    } else if (field.type === "array") {
      out[name] = element.value.split("\n").map((line) => line.trim()).filter(Boolean);
    } else if (element.value !== "" || (schema.required ?? []).includes(name) || field.default !== undefined) {
      out[name] = element.value;
    }
  }
  return out;
}

/** A property's schema with a local `$ref` followed (pydantic puts nested models in `$defs`). */
function resolved(root: Schema, schema: Schema): Schema {
  const ref = schema.$ref ?? schema.anyOf?.find((branch) => branch.$ref)?.$ref;
  if (!ref?.startsWith("#/$defs/")) return schema;
  return root.$defs?.[ref.slice("#/$defs/".length)] ?? schema;
}

/** The tool's argument schema an edited approval must follow, if the interrupt offers one. */
function editSchema(schema: Schema | undefined): Schema | null {
  for (const group of schema?.anyOf ?? []) {
    for (const branch of group.oneOf ?? []) {
      const edited = branch.properties?.editedArgs;
      if (edited?.properties) return edited;
    }
  }
  return null;
}

type ToolCall = { id: string; function: { name: string; arguments: string } };

function toolCall(messages: Message[], id: string | undefined): ToolCall | undefined {
  for (const message of messages) {
    if (message.role !== "assistant") continue;
    const found = (message.toolCalls ?? []).find((call) => call.id === id);
    if (found) return found;
  }
  return undefined;
}

function parsed(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === "object" ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
