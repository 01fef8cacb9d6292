// The Reassign button an operator sees on each card, and the small form it opens:
// the audience that answers from now on, why (the new audience reads it), and
// whether the audience before keeps access. Nothing is sent until both are
// filled in; `send(body)` posts it and returns a sentence when the service
// refused, which is shown next to the form, or null once it is done.

import { el } from "./schema_fields.js";

// A scope name, as the service checks it.
const SCOPE = /^[A-Za-z0-9._:-]{1,200}$/;
let forms = 0;

function field(labelText, input, hint) {
  const hintNode = hint ? el("p", { class: "hint", id: `${input.id}-hint`, text: hint }) : null;
  if (hintNode) input.setAttribute("aria-describedby", hintNode.id);
  return el("div", { class: "field" }, el("label", { for: input.id, text: labelText }), input, hintNode);
}

export function reassignControl(pause, send) {
  const n = ++forms;
  const toggle = el("button", { type: "button", class: "secondary", text: "Reassign",
    "aria-expanded": "false", "aria-controls": `reassign-${n}` });
  const audience = el("input", { type: "text", id: `reassign-audience-${n}`, autocomplete: "off",
    spellcheck: "false", required: true });
  const reason = el("input", { type: "text", id: `reassign-reason-${n}`, autocomplete: "off",
    maxlength: "500", required: true });
  const keep = el("input", { type: "checkbox", id: `reassign-keep-${n}` });
  const problem = el("p", { class: "problem", role: "alert", hidden: true });
  const submit = el("button", { type: "submit", class: "primary", text: "Hand it over" });
  const cancel = el("button", { type: "button", class: "secondary", text: "Cancel" });
  const form = el("form", { class: "reassign", id: `reassign-${n}`, hidden: true, novalidate: true,
    "aria-label": `Reassign: ${pause.query}` },
    field("New audience", audience, "The scope that answers this question from now on, e.g. team-leads."),
    field("Reason", reason, "The new audience reads it."),
    el("div", { class: "field field-inline" }, keep,
      el("label", { for: keep.id, text: "The audience before keeps access too" })),
    el("div", { class: "actions" }, submit, cancel),
    problem);

  const show = (open) => {
    form.hidden = !open;
    toggle.setAttribute("aria-expanded", String(open));
    if (open) audience.focus(); else toggle.focus();
  };
  const refuse = (text, input) => {
    problem.textContent = text;
    problem.hidden = false;
    if (input) { input.setAttribute("aria-invalid", "true"); input.focus(); }
  };
  toggle.addEventListener("click", () => show(form.hidden));
  cancel.addEventListener("click", () => show(false));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    problem.hidden = true;
    for (const input of [audience, reason]) input.removeAttribute("aria-invalid");
    const to = audience.value.trim();
    const why = reason.value.trim();
    if (!SCOPE.test(to)) {
      refuse("Name the audience by its scope: letters, digits, '.', '_', ':' or '-'.", audience);
      return;
    }
    if (!why) { refuse("Say why, for the new audience.", reason); return; }
    form.setAttribute("aria-busy", "true");
    form.querySelectorAll("button").forEach((b) => { b.disabled = true; });
    const refusal = await send({ audience: to, reason: why, keep_previous: keep.checked });
    form.removeAttribute("aria-busy");
    form.querySelectorAll("button").forEach((b) => { b.disabled = false; });
    if (refusal) refuse(refusal, null);
    else { form.hidden = true; toggle.setAttribute("aria-expanded", "false"); }
  });
  return el("div", { class: "reassign-control" }, toggle, form);
}
