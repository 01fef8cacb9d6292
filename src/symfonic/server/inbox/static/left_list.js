// "No longer waiting": each pause that left the list, with a word saying why.
//
// A pause's word may change while the page is open: one answered elsewhere is
// first "being answered by bob" (its claim), then "rejected by bob" (its
// answer), so the entry stays addressable by pause id after its card is gone.
// An outcome this page learned from its own answer is final: a feed frame
// about the same pause arriving later says nothing newer.

import { el } from "./schema_fields.js";

const shown = (value) => (typeof value === "string" ? value : JSON.stringify(value));

// What an edit changed in the call's arguments, one "name before → after" each.
export function changes(before, after) {
  const was = before || {};
  const names = [...new Set([...Object.keys(was), ...Object.keys(after)])];
  const lines = names.filter((name) => JSON.stringify(was[name]) !== JSON.stringify(after[name]))
    .map((name) => {
      if (!(name in after)) return `${name} removed`;
      return name in was ? `${name} ${shown(was[name])} → ${shown(after[name])}` : `${name} → ${shown(after[name])}`;
    });
  return el("p", { class: "changes",
    text: lines.length ? `Changed: ${lines.join("; ")}.` : "Sent with the arguments unchanged." });
}

export class LeftList {
  constructor(listNode, sectionNode) {
    this.listNode = listNode;
    this.sectionNode = sectionNode;
    this.entries = new Map();
  }

  node(pauseId) {
    const entry = this.entries.get(pauseId);
    return entry ? entry.item : null;
  }

  // A pause whose card just left: its entry, at the top, still without a word.
  add(pause) {
    const word = el("span", { class: "word" });
    const details = el("div", { class: "details" });
    const item = el("li", { class: "left", "data-pause-id": pause.pause_id, tabindex: "-1" },
      el("p", {}, el("strong", { text: pause.query }), " — ", word), details);
    this.entries.set(pause.pause_id, { pause, item, word, details, final: false });
    this.listNode.prepend(item);
    this.sectionNode.hidden = false;
  }

  // Says why the pause left; `outcome` (a decision, or "refused", "failed") colours the word.
  say(pauseId, text, details = [], { own = false, outcome = "" } = {}) {
    const entry = this.entries.get(pauseId);
    if (!entry || (entry.final && !own)) return;
    entry.word.textContent = text;
    entry.item.dataset.outcome = outcome;
    entry.details.replaceChildren(...details.filter(Boolean));
    entry.final = own;
  }

  pause(pauseId) {
    const entry = this.entries.get(pauseId);
    return entry ? entry.pause : null;
  }
}
