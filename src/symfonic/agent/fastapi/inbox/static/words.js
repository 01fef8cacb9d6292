// What the page says when the service refuses, or when a pause leaves the list.
// Each refusal becomes a sentence a person understands; the service's own
// message is added where it says something specific (a 422 names the field).

const BY_CODE = {
  unauthenticated: "Your sign-in has ended. Reload the page and sign in again.",
  csrf_refused: "The page is out of date. Reload it and answer again.",
  forbidden: "You are not allowed to answer this question.",
  pause_not_found: "This question no longer exists.",
  already_claimed: "Someone already answered this question.",
  already_answered: "This question was already answered.",
  revision_conflict: "The conversation moved on before your answer arrived.",
  session_busy: "The agent is busy with this conversation; try again in a moment.",
  pause_expired: "This question expired before it was answered.",
  pause_abandoned: "This question was abandoned and can no longer be answered.",
  budget_refused: "The agent has used up its budget for now; try again later.",
  store_unavailable: "The service cannot reach its database right now; try again in a moment.",
  content_too_large: "The answer is too large to send.",
};

const BY_STATUS = {
  401: BY_CODE.unauthenticated,
  403: BY_CODE.forbidden,
  404: BY_CODE.pause_not_found,
  409: BY_CODE.already_claimed,
  410: "This question can no longer be answered.",
  429: BY_CODE.budget_refused,
  503: BY_CODE.store_unavailable,
};

export async function refusalSentence(response) {
  let code = "";
  let message = "";
  try {
    const body = await response.json();
    code = (body.error && body.error.code) || "";
    message = (body.error && body.error.message) || "";
  } catch {
    // Not our JSON (a proxy's page): the status alone has to do.
  }
  if (response.status === 422) {
    return `The answer was not accepted: ${message || "it does not fit what was asked"}.`
      .replace(/\.\.$/, ".");
  }
  return BY_CODE[code] || BY_STATUS[response.status]
    || `The service refused the answer (${response.status}${message ? `: ${message}` : ""}).`;
}

// How a pause was answered, in the words of the list: "rejected by bob".
const ANSWERED = {
  approve: "approved",
  edit: "approved with changes",
  reject: "rejected",
  decline: "declined",
  answer: "answered",
};

export function whoWord(principal, me) {
  return principal ? (principal === me ? "you" : principal) : "someone";
}

// The decision an answer this page sends carries, as the feed names it.
export function decisionOf(pause, answer, status) {
  if (status === "cancelled") return "decline";
  const decision = answer && answer.decision;
  if (pause.kind === "approval" && ["approve", "edit", "reject"].includes(decision)) return decision;
  return "answer";
}

export function answeredWord(decision, who) {
  return `${ANSWERED[decision] || "answered"} by ${who}`;
}

export function leftWord(event, answeredBy, me, decision) {
  const who = whoWord(answeredBy, me);
  switch (event) {
    case "claimed": return `being answered by ${who}`;
    case "answered": return answeredWord(decision, who);
    case "expired": return "expired before anyone answered";
    case "abandoned": return "abandoned: it can no longer be answered";
    case "superseded": return "superseded by a newer question";
    default: return "no longer waiting";
  }
}
