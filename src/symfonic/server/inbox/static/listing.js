// Which pauses the page lists, and where each goes: the person's filters (the
// search box, agent and kind) as the listing's query and as a test of a pause
// the feed announces, and the listing's order (oldest first, by created_at,
// then pause_id), so a new pause is placed where a page would have listed it.

export const PAGE = 50;
// The largest page the listing gives: what a poll re-reads at most.
export const MAX_PAGE = 500;

export class Filters {
  constructor(form) {
    this.search = form.querySelector("#search");
    this.agent = form.querySelector("#agent-filter");
    this.kind = form.querySelector("#kind-filter");
  }

  get text() { return this.search.value.trim(); }

  any() { return Boolean(this.text || this.agent.value || this.kind.value); }

  // Whether the listing, asked with these filters, would list `pause`.
  matches(pause) {
    if (this.agent.value && pause.agent !== this.agent.value) return false;
    if (this.kind.value && pause.kind !== this.kind.value) return false;
    return !this.text || pause.query.toLowerCase().includes(this.text.toLowerCase());
  }

  // The listing's URL for the page after `cursor` (the first without one).
  url(cursor = null, limit = PAGE) {
    const params = new URLSearchParams({ state: "pending", details: "true", limit: String(limit) });
    if (this.text) params.set("q", this.text);
    if (this.agent.value) params.set("agent", this.agent.value);
    if (this.kind.value) params.set("kind", this.kind.value);
    if (cursor) params.set("cursor", cursor);
    return `v1/pauses?${params}`;
  }
}

// created_at as text that sorts as it compares: the service leaves out a zero
// fraction of a second, so every fraction is padded to microseconds.
export function orderKey(pause) {
  const [, seconds, fraction = "", zone] = pause.created_at.match(/^(.*?:\d\d)(\.\d+)?(.*)$/) || [];
  const at = seconds === undefined ? pause.created_at : `${seconds}${(fraction || ".").padEnd(7, "0")}${zone}`;
  return `${at} ${pause.pause_id}`;
}

// Where `key` goes in `entries` (sorted by key): after every entry not greater.
export function placeOf(entries, key) {
  let low = 0, high = entries.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (entries[middle].key <= key) low = middle + 1; else high = middle;
  }
  return low;
}

const NUMBER = new Intl.NumberFormat("en-US");

export function counted(total) { return NUMBER.format(total); }
