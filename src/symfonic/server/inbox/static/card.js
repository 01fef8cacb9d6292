// One pause's card: what it asks, of which call, who asked, how it came to this
// person (escalated or reassigned), until when, and its answer form; for an
// operator, a Reassign button too. The caller keeps the card's live parts
// (its clock, its moved line) and updates them.

import { answerForm } from "./answer_form.js";
import { reassignControl } from "./reassign_form.js";
import { el } from "./schema_fields.js";
import { mayApprove, movedLine, votesLine } from "./words.js";

export function countdown(expiresAt) {
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

export function cardFor(pause, { me, answer, reassign }) {
  const heading = el("h3", { id: `q-${pause.pause_id}`, text: pause.query });
  const clock = el("span", { class: "expires", text: countdown(pause.expires_at) });
  const outcome = el("div", { class: "outcome", role: "status", "aria-live": "polite" });
  const moved = el("p", { class: "moved" });
  const votes = el("p", { class: "votes" });
  const card = el("li", { class: "card", "data-pause-id": pause.pause_id, tabindex: "-1" },
    el("article", { "aria-labelledby": `q-${pause.pause_id}` },
      el("p", { class: "meta" },
        el("span", { class: `kind kind-${pause.kind}`, text: kindWord(pause.kind) }),
        el("span", { class: "agent", text: `agent ${pause.agent}` }),
        // A delegate's question, answered through its caller's pause: name both.
        ...(pause.sub_agent
          ? [el("span", { class: "sub-agent", text: `question from its delegate ${pause.sub_agent}` })]
          : []),
        // A question an MCP server asked in the middle of a tool call: name the server.
        ...(pause.server
          ? [el("span", { class: "server", text: `asked by MCP server ${pause.server}` })]
          : []),
        el("span", { class: "asker", text: `asked by ${pause.asked_by || "?"}` }),
        clock),
      moved, heading, votes, callBlock(pause), context(pause),
      answerForm(pause, (value, status) => answer(pause, value, status)),
      reassign ? reassignControl(pause, (body) => reassign(pause, body)) : null,
      outcome));
  const entry = { pause, card, clock, outcome, moved, votes };
  showMoved(entry, me);
  showVotes(entry, me);
  return entry;
}

// Where the card's vote stands, from `entry.pause`: its line, and no Approve for
// someone who may not (the requester, or one already counted). Edit is a new
// proposal, offered to whoever may approve, except for a delegate's call that
// needs several approvals (refused: the delegate's checkpoint holds the call).
export function showVotes(entry, me) {
  const line = votesLine(entry.pause, me);
  entry.votes.textContent = line;
  entry.votes.hidden = !line;
  const approve = mayApprove(entry.pause, me);
  for (const node of entry.card.querySelectorAll('[data-action="approve"]')) node.hidden = !approve;
  // One already counted may still edit: the edit is their approval of other arguments.
  const own = entry.pause.allow_requester === false && entry.pause.asked_by === me;
  const edit = !own && ((entry.pause.approvals_required || 1) <= 1 || !entry.pause.sub_agent);
  for (const node of entry.card.querySelectorAll('[data-action="edit"]')) node.hidden = !edit;
}

// The card's line saying how the pause came to this person, from `entry.pause`.
export function showMoved(entry, me) {
  const line = movedLine(entry.pause.readdressed, entry.pause.asked_by, me);
  entry.moved.textContent = line;
  entry.moved.hidden = !line;
}

