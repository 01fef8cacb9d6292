// The inbox page: the pauses waiting for this person, kept live, and their answers.
//
// The list is a map pause_id -> card. GET /v1/pauses fills it (with each
// pause's tool call and recent messages); the feed GET /v1/pauses/events says
// when to look again (a snapshot or pause.created) and when a pause left
// (claimed, answered, expired, abandoned, superseded), which moves its card to
// "No longer waiting" with a word saying why, and says how it was answered
// when the answer follows its claim. Where the feed cannot be opened the page
// asks GET /v1/pauses every few seconds instead. A link to /inbox#<pause_id>
// (a webhook sends one) scrolls to that pause and marks it.

import { answerForm } from "./answer_form.js";
import { el } from "./schema_fields.js";
import { changes, LeftList } from "./left_list.js";
import { answeredWord, decisionOf, leftWord, refusalSentence } from "./words.js";

const POLL_SECONDS = 5;
const csrf = document.querySelector('meta[name="csrf-token"]').content;
const me = document.getElementById("principal").textContent;
const listNode = document.getElementById("pauses");
const done = new LeftList(document.getElementById("done"), document.getElementById("done-section"));
const statusNode = document.getElementById("status");
const cards = new Map();
// Pauses this page is answering: the feed and the list leave them alone until
// the answer's own outcome arrives.
const answering = new Set();
let refreshing = null;
let refreshAgain = false;
// The pause a link's #fragment points to, until the page has shown it.
let target = "";

const api = (path, options = {}) => fetch(path, {
  credentials: "same-origin",
  ...options,
  headers: { Accept: "application/json", ...(options.headers || {}) },
});

function say(text) { statusNode.textContent = text; }

function countdown(expiresAt) {
  const left = Math.max(0, Math.round((Date.parse(expiresAt) - Date.now()) / 1000));
  if (left <= 0) return "expired";
  const d = Math.floor(left / 86400), h = Math.floor((left % 86400) / 3600);
  const m = Math.floor((left % 3600) / 60), s = left % 60;
  if (d) return `expires in ${d} d ${h} h`;
  if (h) return `expires in ${h} h ${m} min`;
  if (m) return `expires in ${m} min ${s} s`;
  return `expires in ${s} s`;
}

function messageText(message) {
  const content = typeof message.content === "string" ? message.content
    : (message.content || []).map((part) => (typeof part === "string" ? part : part.text || "")).join("");
  if (content) return content;
  if (message.tool_calls && message.tool_calls.length) {
    return `asks to call ${message.tool_calls.map((c) => c.name).join(", ")}`;
  }
  return "";
}

const ROLES = { human: "Person", user: "Person", ai: "Agent", assistant: "Agent", tool: "Tool", system: "System" };

function context(pause) {
  const messages = (pause.recent_messages || []).filter((m) => messageText(m));
  if (!messages.length) return null;
  return el("details", { class: "context" }, el("summary", { text: `Conversation so far (last ${messages.length})` }),
    el("ol", {}, ...messages.map((m) => el("li", { class: `role-${m.role}` },
      el("span", { class: "role", text: `${m.role === "tool" && m.name ? m.name : ROLES[m.role] || m.role}: ` }),
      el("span", { text: messageText(m) })))));
}

function callBlock(pause) {
  if (!pause.tool_name || pause.kind !== "approval") return null;
  const rows = Object.entries(pause.tool_args || {}).map(([name, value]) =>
    el("div", {}, el("dt", { text: name }), el("dd", { text: typeof value === "string" ? value : JSON.stringify(value) })));
  return el("div", { class: "call" }, el("p", {}, "Tool ", el("code", { text: pause.tool_name })),
    rows.length ? el("dl", {}, ...rows) : el("p", { text: "No arguments." }));
}

function kindWord(kind) {
  return { approval: "Approval", input: "Question", form: "Form" }[kind] || kind;
}

function cardFor(pause) {
  const heading = el("h3", { id: `q-${pause.pause_id}`, text: pause.query });
  const clock = el("span", { class: "expires", text: countdown(pause.expires_at) });
  const outcome = el("div", { class: "outcome", role: "status", "aria-live": "polite" });
  const card = el("li", { class: "card", "data-pause-id": pause.pause_id, tabindex: "-1" },
    el("article", { "aria-labelledby": `q-${pause.pause_id}` },
      el("p", { class: "meta" },
        el("span", { class: `kind kind-${pause.kind}`, text: kindWord(pause.kind) }),
        el("span", { class: "agent", text: `agent ${pause.agent}` }),
        // A delegate's question, answered through its caller's pause: name both.
        ...(pause.sub_agent
          ? [el("span", { class: "sub-agent", text: `question from its delegate ${pause.sub_agent}` })]
          : []),
        el("span", { class: "asker", text: `asked by ${pause.asked_by || "?"}` }),
        clock),
      heading, callBlock(pause), context(pause),
      answerForm(pause, (answer, status) => answer_(pause, answer, status)),
      outcome));
  return { pause, card, clock, outcome };
}

function updateCount() {
  const n = cards.size;
  document.getElementById("count").textContent = n ? `(${n})` : "";
  document.getElementById("empty").hidden = n > 0;
}

function add(pause) {
  if (cards.has(pause.pause_id) || !pause.token) return;
  const entry = cardFor(pause);
  cards.set(pause.pause_id, entry);
  listNode.append(entry.card);
  updateCount();
}

// The pause leaves the waiting list, or its word there changes; `word` says
// why, `details` may add the outcome. `own`: what this page's answer learned.
function leave(pauseId, word, details = [], { own = false, outcome = "" } = {}) {
  if (answering.has(pauseId) && !own) return;
  const entry = cards.get(pauseId);
  if (entry) {
    cards.delete(pauseId);
    entry.card.remove();
    updateCount();
    done.add(entry.pause);
  }
  done.say(pauseId, word, details, { own, outcome });
}

function showTarget() {
  if (!target) return;
  const node = cards.has(target) ? cards.get(target).card : done.node(target);
  target = "";
  if (!node) {
    say("The question this link points to is not waiting for you: it was answered, "
      + "expired or is not yours to answer.");
    return;
  }
  document.querySelectorAll(".target").forEach((other) => other.classList.remove("target"));
  node.classList.add("target");
  node.focus({ preventScroll: true });
  node.scrollIntoView({ block: "center" });
}

function followLink() {
  target = decodeURIComponent(window.location.hash.slice(1));
  if (!refreshing) showTarget();
}

async function refresh() {
  if (refreshing) { refreshAgain = true; return refreshing; }
  refreshing = (async () => {
    do {
      refreshAgain = false;
      let response;
      try {
        response = await api("v1/pauses?state=pending&details=true");
      } catch {
        say("The inbox cannot reach the service; it will try again.");
        return;
      }
      if (response.status === 401) { window.location.reload(); return; }
      if (!response.ok) { say(await refusalSentence(response)); return; }
      const { pauses } = await response.json();
      const seen = new Set(pauses.map((p) => p.pause_id));
      for (const id of [...cards.keys()]) if (!seen.has(id)) leave(id, "no longer waiting");
      pauses.forEach(add);
      updateCount();
      say("");
    } while (refreshAgain);
    showTarget();
  })();
  try { await refreshing; } finally { refreshing = null; }
}

async function answer_(pause, answer, status) {
  answering.add(pause.pause_id);
  try {
    return await send(pause, answer, status);
  } finally {
    answering.delete(pause.pause_id);
  }
}

async function send(pause, answer, status) {
  const entry = cards.get(pause.pause_id);
  let response;
  try {
    response = await api("v1/resume", {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
      body: JSON.stringify({ token: pause.token, answer, status }),
    });
  } catch {
    return "The answer could not be sent: the service did not answer. Check the connection and try again.";
  }
  if (!response.ok) {
    const sentence = await refusalSentence(response);
    if ([404, 409, 410].includes(response.status)) {
      leave(pause.pause_id, sentence, [], { own: true, outcome: "refused" });
      return null;
    }
    return sentence;
  }
  const outcome = await response.json();
  const decision = decisionOf(pause, answer, status);
  const edited = decision === "edit" ? changes(pause.tool_args, answer.args) : null;
  const own = { own: true, outcome: decision };
  const word = answeredWord(decision, "you");
  if (outcome.status === "complete") {
    leave(pause.pause_id, word, [edited, el("p", { class: "result" }, "The agent finished: ", el("q", { text: outcome.answer || "" }))], own);
  } else if (outcome.status === "paused") {
    leave(pause.pause_id, word, [edited, el("p", { class: "result", text: `The agent has another question: ${outcome.pause.query}` })], own);
    refresh();
  } else {
    leave(pause.pause_id, word, [edited, el("p", { class: "result failed",
      text: `The agent could not finish: ${(outcome.error && outcome.error.message) || "the turn failed"}.` })], own);
  }
  if (entry) {
    say("Answer sent.");
    setTimeout(() => { if (statusNode.textContent === "Answer sent.") say(""); }, 4000);
  }
  return null;
}

function tick() {
  for (const [id, entry] of [...cards]) {
    const text = countdown(entry.pause.expires_at);
    if (text === "expired") leave(id, "expired before anyone answered", [], { outcome: "expired" });
    else entry.clock.textContent = text;
  }
}

function follow() {
  if (!("EventSource" in window)) return poll();
  const feed = new EventSource("v1/pauses/events");
  feed.addEventListener("pauses.snapshot", () => refresh());
  feed.addEventListener("pause.created", () => refresh());
  for (const name of ["claimed", "answered", "expired", "abandoned", "superseded"]) {
    feed.addEventListener(`pause.${name}`, (event) => {
      const data = JSON.parse(event.data);
      const before = done.pause(data.pause_id) || (cards.get(data.pause_id) || {}).pause;
      const edited = data.edited_args && before ? changes(before.tool_args, data.edited_args) : null;
      leave(data.pause_id, leftWord(name, data.answered_by, me, data.decision), [edited],
        { outcome: data.decision || name });
    });
  }
  feed.addEventListener("error", () => {
    // A closed feed (404, 401) does not reconnect by itself: fall back to asking.
    if (feed.readyState === EventSource.CLOSED) poll();
  });
}

function poll() {
  setInterval(refresh, POLL_SECONDS * 1000);
}

window.addEventListener("hashchange", followLink);
target = decodeURIComponent(window.location.hash.slice(1));
refresh();
follow();
setInterval(tick, 1000);
