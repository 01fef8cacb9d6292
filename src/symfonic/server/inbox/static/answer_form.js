// The answer form of one pause, built from its response_schema.
//
// An approval offers an optional reason for rejecting, then Approve, Edit (the
// gated call's arguments, prefilled and typed, opening under the buttons) and
// Reject (sending the reason); a text question a text box; a
// form its fields. Every kind can be declined. Nothing is sent until every
// field is valid; `send(answer, status)` does the sending and returns a
// sentence to show next to the form when the service refused.

import { el, fieldFor, focusFirstInvalid, resolve } from "./schema_fields.js";

function approvalArgsSchema(schema) {
  const branches = schema.oneOf || schema.anyOf || [];
  const edit = branches.find((b) => b.properties && b.properties.decision
    && b.properties.decision.const === "edit");
  return edit ? resolve(edit.properties.args, schema) : { type: "object" };
}

function buttons(...list) {
  return el("div", { class: "actions" }, ...list);
}

function button(text, onclick, kind = "", action = "") {
  return el("button", { type: "button", class: kind, text, onclick, "data-action": action || null });
}

export function answerForm(pause, send) {
  const schema = pause.response_schema || {};
  const form = el("form", { class: "answer", novalidate: true, "aria-label": `Answer: ${pause.query}` });
  const problem = el("p", { class: "problem", role: "alert", hidden: true });
  let busy = false;

  const submit = async (answer, status = "resolved") => {
    if (busy) return;
    busy = true;
    problem.hidden = true;
    form.setAttribute("aria-busy", "true");
    form.querySelectorAll("button").forEach((b) => { b.disabled = true; });
    const refusal = await send(answer, status);
    busy = false;
    form.removeAttribute("aria-busy");
    form.querySelectorAll("button").forEach((b) => { b.disabled = false; });
    if (refusal) {
      problem.textContent = refusal;
      problem.hidden = false;
    }
  };
  // An MCP server's question is declined outright (it hears `decline`); any other
  // pause is left unanswered, which is all a decline means to it.
  const decline = button("Decline", () => submit(null, pause.server ? "declined" : "cancelled"), "secondary");
  decline.title = pause.server
    ? `Decline to answer: the MCP server ${pause.server} is told you declined`
    : "Decline to answer: the agent is told you gave no answer";

  if (pause.kind === "approval") {
    const reason = fieldFor({ type: "string", description: "Sent to the agent if you reject." },
                            schema, "Reason for rejecting", false, undefined);
    const argsSchema = approvalArgsSchema(schema);
    const editor = el("div", { class: "editor", hidden: true });
    let argsField = null;
    // Hidden (data-action) where the card says this person may not approve, or
    // where an edit could not count toward approvals of the call as asked.
    const edit = button("Edit", () => {
      if (!argsField) {
        argsField = fieldFor(argsSchema, schema, "Arguments", true, pause.tool_args || {}, true);
        editor.append(argsField.element, buttons(button("Approve with changes", () => {
          const result = argsField.read();
          if (!result.ok) { focusFirstInvalid(editor); return; }
          submit({ decision: "edit", args: result.value });
        }, "primary"), button("Cancel edit", () => { editor.hidden = true; edit.setAttribute("aria-expanded", "false"); edit.focus(); }, "secondary")));
      }
      editor.hidden = false;
      edit.setAttribute("aria-expanded", "true");
      argsField.focus();
    }, "secondary", "edit");
    edit.setAttribute("aria-expanded", "false");
    const reject = button("Reject", () => {
      const result = reason.read();
      const text = result.value ? String(result.value).trim() : "";
      submit(text ? { decision: "reject", reason: text } : { decision: "reject" });
    }, "danger");
    // The reason comes before the buttons, so on a phone it is typed before Reject
    // is reached; the edited arguments open just under the Edit that opened them.
    form.append(
      reason.element,
      buttons(button("Approve", () => submit({ decision: "approve" }), "primary", "approve"), edit, reject, decline),
      editor, problem);
  } else {
    const root = resolve(schema, schema);
    const field = root.type === "string" && !root.enum
      ? fieldFor(root, schema, "Your answer", true, undefined)
      : fieldFor(root, schema, root.title || "", true, undefined, true);
    form.append(field.element, buttons(button("Submit", () => {
      const result = field.read();
      if (!result.ok) { focusFirstInvalid(form); return; }
      submit(result.value);
    }, "primary"), decline), problem);
  }
  // Enter in a one-line field submits the obvious way, not the browser's default.
  form.addEventListener("submit", (event) => event.preventDefault());
  return form;
}
