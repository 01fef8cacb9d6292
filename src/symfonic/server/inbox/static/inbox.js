// The inbox page: the pauses waiting for this person, kept live, and their answers.
//
// The list shows a page at a time, oldest first, with how many wait in all;
// more pages load as the person scrolls to the end (or presses Load more), and
// the search box and the agent and kind filters ask the listing again. The feed
// GET /v1/pauses/events?details=true starts with the first page (a snapshot)
// and then says what changed: a pause.created is placed among the cards where a
// page would list it (never by asking for the list again), and a pause that
// left (claimed, answered, expired, abandoned, superseded) moves to "No longer
// waiting" with a word saying why, and how it was answered when the answer
// follows its claim. A pause escalated or reassigned (pause.escalated,
// pause.reassigned) arrives for the audience it was handed to, with a line
// saying from whom and why, and leaves the one that lost it, saying where it
// went; an operator's cards have a Reassign button. Where the feed cannot be
// opened the page asks the listing every few seconds instead. A link to /inbox#<pause_id> (a webhook sends one)
// scrolls to that pause and marks it.

import { cardFor, countdown, showMoved, showVotes } from "./card.js";
import { el } from "./schema_fields.js";
import { changes, LeftList } from "./left_list.js";
import { counted, Filters, MAX_PAGE, placeOf, orderKey } from "./listing.js";
import {
  answeredWord, decisionOf, handedWord, leftWord, reassignRefusal, refusalSentence, votesLine,
} from "./words.js";

const POLL_SECONDS = 5;
const csrf = document.querySelector('meta[name="csrf-token"]').content;
const me = document.getElementById("principal").textContent;
// Whether this principal may hand pauses to another audience (the operator scope).
const mayReassign = document.querySelector('meta[name="may-reassign"]').content === "yes";
const listNode = document.getElementById("pauses");
const done = new LeftList(document.getElementById("done"), document.getElementById("done-section"));
const statusNode = document.getElementById("status");
const moreButton = document.getElementById("more");
const filters = new Filters(document.getElementById("filters"));
// Every card, by pause id, and in the listing's order.
const cards = new Map();
let ordered = [];
// How many wait in all (the listing's total, kept by the feed), and where the
// next page starts (null: every page is shown).
let total = 0;
let cursor = null;
// Each new listing (first page, new filters) outdates the answers to the last.
let generation = 0;
let loadingMore = false;
// Pauses that left while the page was open: a page read before they left
// must not bring them back.
const gone = new Set();
// Pauses this page is answering: the feed and the list leave them alone until
// the answer's own outcome arrives.
const answering = new Set();
// The pause a link's #fragment points to, until the page has shown it.
let target = "";

const api = (path, options = {}) => fetch(path, {
  credentials: "same-origin",
  ...options,
  headers: { Accept: "application/json", ...(options.headers || {}) },
});

function say(text) { statusNode.textContent = text; }

function updateCount() {
  document.getElementById("count").textContent = `: ${counted(Math.max(total, cards.size))}`;
  const empty = document.getElementById("empty");
  empty.hidden = cards.size > 0;
  empty.textContent = filters.any() ? "Nothing waiting for you matches these filters."
    : "Nothing is waiting for you. New questions appear here as agents ask them.";
  moreButton.hidden = !cursor;
  moreButton.textContent = `Load more (${counted(Math.max(0, total - cards.size))} more)`;
}

// A card for `pause`, where the listing's order puts it; false if it has one,
// cannot be answered, or already left.
function add(pause) {
  if (cards.has(pause.pause_id) || !pause.token || gone.has(pause.pause_id)) return false;
  const entry = { ...cardFor(pause, { me, answer: answer_, reassign: mayReassign && reassign_ }),
    key: orderKey(pause) };
  const at = placeOf(ordered, entry.key);
  listNode.insertBefore(entry.card, at < ordered.length ? ordered[at].card : null);
  ordered.splice(at, 0, entry);
  cards.set(pause.pause_id, entry);
  return true;
}

function remove(pauseId) {
  const entry = cards.get(pauseId);
  cards.delete(pauseId);
  ordered = ordered.filter((other) => other !== entry);
  entry.card.remove();
}

function clear() {
  cards.clear();
  ordered = [];
  listNode.replaceChildren();
}

// Shows a listing's page: the first replaces the list, a later one extends it.
function showPage(page, { first }) {
  if (first) clear();
  page.pauses.forEach(add);
  total = page.total;
  cursor = page.next_cursor;
  updateCount();
  say("");
  if (first) showTarget();
}

async function listed(url) {
  let response;
  try {
    response = await api(url);
  } catch {
    say("The inbox cannot reach the service; it will try again.");
    return null;
  }
  if (response.status === 401) { window.location.reload(); return null; }
  if (!response.ok) { say(await refusalSentence(response)); return null; }
  return response.json();
}

async function loadFirst() {
  const mine = ++generation;
  const page = await listed(filters.url());
  if (page && mine === generation) showPage(page, { first: true });
}

async function loadMore() {
  if (!cursor || loadingMore) return;
  loadingMore = true;
  const mine = generation;
  try {
    const page = await listed(filters.url(cursor));
    if (page && mine === generation) showPage(page, { first: false });
  } finally {
    loadingMore = false;
  }
}

// Without the feed: the pages shown are read again, and what is gone from them
// leaves. A pause made since is the newest, so it shows once the list reaches
// the end; until then the count and Load more say it is there.
async function reread() {
  if (answering.size) return;
  const mine = ++generation;
  const page = await listed(filters.url(null, Math.min(MAX_PAGE, Math.max(ordered.length, 50))));
  if (!page || mine !== generation) return;
  const seen = new Set(page.pauses.map((p) => p.pause_id));
  const last = page.pauses.length ? orderKey(page.pauses[page.pauses.length - 1]) : "";
  for (const entry of [...ordered]) {
    if (!seen.has(entry.pause.pause_id) && (!page.next_cursor || entry.key <= last)) {
      leave(entry.pause.pause_id, "no longer waiting");
    }
  }
  showPage(page, { first: false });
}

// The pause leaves the waiting list, or its word there changes; `word` says
// why, `details` may add the outcome. `own`: what this page's answer learned.
function leave(pauseId, word, details = [], { own = false, outcome = "" } = {}) {
  if (answering.has(pauseId) && !own) return;
  const entry = cards.get(pauseId);
  if (!gone.has(pauseId)) {
    gone.add(pauseId);
    // One not on screen counts only when no filter hides which pauses it may be.
    if (entry || !filters.any()) total = Math.max(0, total - 1);
  }
  if (entry) {
    remove(pauseId);
    done.add(entry.pause);
  }
  updateCount();
  done.say(pauseId, word, details, { own, outcome });
}

function showTarget() {
  if (!target) return;
  const node = cards.has(target) ? cards.get(target).card : done.node(target);
  target = "";
  if (!node) {
    say(cursor ? "The question this link points to is not among those shown: it may be further "
      + "down the list (Load more), or it was answered, expired or is not yours to answer."
      : "The question this link points to is not waiting for you: it was answered, "
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
  showTarget();
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
      // The digest of the call this card showed: a changed question is refused, not approved.
      body: JSON.stringify({ token: pause.token, answer, status, args_digest: pause.args_digest ?? undefined }),
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
  if (response.status === 202) return counted_(pause, outcome, answer);
  const decision = decisionOf(pause, answer, status);
  const edited = decision === "edit" ? changes(pause.tool_args, answer.args) : null;
  const own = { own: true, outcome: decision };
  const word = answeredWord(decision, "you");
  if (outcome.status === "complete") {
    leave(pause.pause_id, word, [edited, el("p", { class: "result" }, "The agent finished: ", el("q", { text: outcome.answer || "" }))], own);
  } else if (outcome.status === "paused") {
    // The next question comes as the feed's pause.created (or the next poll).
    leave(pause.pause_id, word, [edited, el("p", { class: "result", text: `The agent has another question: ${outcome.pause.query}` })], own);
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

// An approval counted toward a pause that needs several: it stays, with its votes
// (and, after this person's edit, with the arguments they proposed).
function counted_(pause, outcome, answer) {
  let entry = cards.get(pause.pause_id);
  if (entry) {
    const edited = outcome.pause.args_digest !== entry.pause.args_digest && answer && answer.args;
    entry = revoted(entry, { ...outcome.pause, ...(edited ? { tool_args: answer.args } : {}) });
    entry.outcome.textContent = `Your approval is counted: ${votesLine(entry.pause, me)}.`;
  }
  say("Approval counted.");
  return null;
}

// The feed's pause.approved: someone's approval counted; the card's votes change.
function approved(data) {
  const entry = cards.get(data.pause_id);
  if (!entry || !data.pause) return;
  revoted(entry, data.pause);
}

// The card after a vote: its votes, and, when an edit made the pause a new proposal
// (another digest), the card drawn again with the arguments the others now approve
// and the question worded from them.
function revoted(entry, pause) {
  if (pause.args_digest === entry.pause.args_digest) {
    entry.pause = { ...entry.pause, approvals: pause.approvals };
    showVotes(entry, me);
    return entry;
  }
  const fresh = { ...entry.pause, approvals: pause.approvals, args_digest: pause.args_digest,
    ...(pause.query ? { query: pause.query } : {}),
    ...(pause.tool_args ? { tool_args: pause.tool_args } : {}) };
  remove(entry.pause.pause_id);
  add(fresh);
  return cards.get(fresh.pause_id);
}

async function reassign_(pause, body) {
  let response;
  try {
    response = await api(`v1/pauses/${encodeURIComponent(pause.pause_id)}/reassign`, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
      body: JSON.stringify(body),
    });
  } catch {
    return "The reassignment could not be sent: the service did not answer. Check the connection and try again.";
  }
  if (!response.ok) return reassignRefusal(response);
  const view = await response.json();
  const entry = cards.get(pause.pause_id);
  if (view.token && entry) {
    // Still this person's to answer too (kept, or in the new audience): only its line changes.
    entry.pause = { ...entry.pause, audience: view.audience, readdressed: view.readdressed };
    showMoved(entry, me);
  } else if (!view.token) {
    leave(pause.pause_id, handedWord(view.readdressed, me), [], { own: true, outcome: "handed" });
  }
  say("Reassigned.");
  return null;
}

// A pause handed to another audience, as the feed tells it: with its token it is
// this person's to answer (it arrives, or its line changes); without, it left them.
function readdressed(data) {
  const entry = cards.get(data.pause_id);
  if (!data.pause) {
    leave(data.pause_id, handedWord(data.readdressed, me), [], { outcome: "handed" });
  } else if (entry) {
    entry.pause = { ...entry.pause, audience: data.pause.audience, readdressed: data.pause.readdressed };
    showMoved(entry, me);
  } else {
    gone.delete(data.pause_id);  // handed back to this person after it left them
    created(data.pause);
  }
}

function tick() {
  for (const [id, entry] of [...cards]) {
    const text = countdown(entry.pause.expires_at);
    if (text === "expired") leave(id, "expired before anyone answered", [], { outcome: "expired" });
    else entry.clock.textContent = text;
  }
}

function created(pause) {
  if (!pause || !filters.matches(pause) || !add(pause)) return;
  total += 1;
  updateCount();
}

function follow() {
  if (!("EventSource" in window)) return poll();
  const feed = new EventSource("v1/pauses/events?details=true");
  // The first page as the feed starts (or starts again after falling behind):
  // with filters set, the listing is asked for their first page instead.
  feed.addEventListener("pauses.snapshot", (event) => {
    if (filters.any()) { loadFirst(); return; }
    generation += 1;
    showPage(JSON.parse(event.data), { first: true });
  });
  feed.addEventListener("pause.created", (event) => created(JSON.parse(event.data).pause));
  feed.addEventListener("pause.approved", (event) => approved(JSON.parse(event.data)));
  for (const name of ["pause.escalated", "pause.reassigned"]) {
    feed.addEventListener(name, (event) => readdressed(JSON.parse(event.data)));
  }
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
  loadFirst();
  setInterval(reread, POLL_SECONDS * 1000);
}

let typing = null;
document.getElementById("filters").addEventListener("submit", (event) => event.preventDefault());
document.getElementById("search").addEventListener("input", () => {
  clearTimeout(typing);
  typing = setTimeout(loadFirst, 250);
});
for (const id of ["agent-filter", "kind-filter"]) {
  document.getElementById(id).addEventListener("change", loadFirst);
}
moreButton.addEventListener("click", loadMore);
// The next page loads as the end of the list comes into view.
new IntersectionObserver((seen) => { if (seen.some((e) => e.isIntersecting)) loadMore(); },
  { rootMargin: "600px 0px" }).observe(moreButton);

window.addEventListener("hashchange", followLink);
target = decodeURIComponent(window.location.hash.slice(1));
follow();
setInterval(tick, 1000);
