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

// The service's error code and message; empty when the body is not our JSON.
async function errorOf(response) {
  try {
    const body = await response.json();
    return { code: (body.error && body.error.code) || "", message: (body.error && body.error.message) || "" };
  } catch {
    // Not our JSON (a proxy's page): the status alone has to do.
    return { code: "", message: "" };
  }
}

export async function refusalSentence(response) {
  const { code, message } = await errorOf(response);
  if (response.status === 422) {
    return `The answer was not accepted: ${message || "it does not fit what was asked"}.`
      .replace(/\.\.$/, ".");
  }
  if (code === "forbidden" && message.includes(": ")) {
    // The service says who may answer after its colon: "carol may not answer this pause: only alice may".
    return `You are not allowed to answer this question: ${message.slice(message.indexOf(": ") + 2)}.`;
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

// Where a pause that needs several approvals stands: "1 of 2 approvals, by carol";
// "" for a pause one answer settles.
export function votesLine(pause, me) {
  const needed = pause.approvals_required || 1;
  if (needed <= 1) return "";
  const given = (pause.approvals || []).map((vote) => whoWord(vote.principal, me));
  const words = `${given.length} of ${needed} approvals`;
  return given.length ? `${words}, by ${given.join(", ")}` : words;
}

// Whether `me` may still approve: not the requester where its rule forbids it,
// and not someone whose approval is already counted.
export function mayApprove(pause, me) {
  if (pause.allow_requester === false && pause.asked_by === me) return false;
  return !(pause.approvals || []).some((vote) => vote.principal === me);
}

export function whoWord(principal, me) {
  return principal ? (principal === me ? "you" : principal) : "someone";
}

// The decision an answer this page sends carries, as the feed names it.
export function decisionOf(pause, answer, status) {
  if (status === "cancelled" || status === "declined") return "decline";
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

// A refused reassignment: the same words where they fit, its own where an
// answer's would mislead (a 403 here is about the operator scope, not the pause).
const REASSIGN_BY_CODE = {
  forbidden: "Only an operator may reassign questions.",
  pause_not_pending: "This question is no longer waiting for an answer, so it cannot be reassigned.",
};

export async function reassignRefusal(response) {
  const { code, message } = await errorOf(response);
  if (response.status === 422) {
    return `The reassignment was not accepted: ${message || "check the audience and the reason"}.`
      .replace(/\.\.$/, ".");
  }
  return REASSIGN_BY_CODE[code] || BY_CODE[code] || BY_STATUS[response.status]
    || `The service refused the reassignment (${response.status}${message ? `: ${message}` : ""}).`;
}

// "1 h", "15 min", "1 h 30 min", "40 s": an escalation step's wait as people say it.
export function durationWords(seconds) {
  const whole = Math.round(seconds);
  const h = Math.floor(whole / 3600), m = Math.floor((whole % 3600) / 60), s = whole % 60;
  if (!h && !m) return `${s} s`;
  return [h ? `${h} h` : "", m ? `${m} min` : ""].filter(Boolean).join(" ");
}

// How a pause came to its audience, on its card: "Escalated from approvers after 1 h",
// "Reassigned from carol by olga: carol is away". The audience before is null when
// it was the pause's owner, who asked it.
export function movedLine(readdressed, askedBy, me) {
  if (!readdressed) return "";
  const from = readdressed.previous || whoWord(askedBy, me);
  if (readdressed.kind === "escalated") {
    return `Escalated from ${from} after ${durationWords(readdressed.after || 0)}`;
  }
  const by = `Reassigned from ${from} by ${whoWord(readdressed.by, me)}`;
  return readdressed.reason ? `${by}: ${readdressed.reason}` : by;
}

// Why a pause left this person's list when it was handed to an audience they are not in.
export function handedWord(readdressed, me) {
  if (!readdressed) return "handed to someone else";
  if (readdressed.kind === "escalated") return `escalated to ${readdressed.audience}`;
  return `reassigned to ${readdressed.audience} by ${whoWord(readdressed.by, me)}`;
}
