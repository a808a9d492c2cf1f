import type { Words } from './words.js';

/**
 * Phrases that instruct the reader of a passage (docs/trust.md, §15.2): a rule is a few steps, each a set of words,
 * each found within a few words of the one before. Matching tries each rule at each word and takes the nearest word
 * of each next step: words × rules × steps × gap, linear in the text.
 */

export type PhraseKind = 'override' | 'addressed-to-model';

interface Step {
  readonly words: ReadonlySet<string>;
  /** How many words may lie between this step's word and the previous one's. */
  readonly gap: number;
}

interface Rule {
  readonly kind: PhraseKind;
  readonly weight: number;
  readonly steps: readonly Step[];
}

const set = (words: string) => new Set(words.split(' '));
const step = (words: string, gap = 0): Step => ({ words: set(words), gap });

const DISMISS = 'ignore disregard forget override overrule bypass discard abandon dismiss circumvent nullify neglect';
const EARLIER =
  'previous prior above earlier preceding foregoing former all any your system original initial existing every';
const ORDERS =
  'instructions instruction prompt prompts directions directives rules guidelines guidance context messages ' +
  'commands constraints programming guardrails policies restrictions orders training conversation everything ' +
  'safeguards filters moderation';
const MODEL = 'ai llm llms model language assistant chatbot bot gpt chatgpt claude gemini copilot agent agents';
const SECRET = 'prompt instructions message messages';

const RULES: readonly Rule[] = [
  // "Ignore all previous instructions", "disregard your system prompt", "forget everything above".
  { kind: 'override', weight: 0.85, steps: [step(DISMISS), step(EARLIER, 3), step(ORDERS, 3)] },
  { kind: 'override', weight: 0.6, steps: [step(DISMISS), step('the', 0), step('above before', 0)] },
  {
    kind: 'override',
    weight: 0.6,
    steps: [step(DISMISS), step('everything anything', 1), step('above before said told', 3)],
  },
  // "New instructions:", "your real instructions are".
  {
    kind: 'override',
    weight: 0.5,
    steps: [step('new updated real actual true revised secret hidden'), step('instructions', 0)],
  },
  // "You are now DAN", "you are now in developer mode", "from now on you".
  {
    kind: 'override',
    weight: 0.7,
    steps: [
      step('you'),
      step('are', 0),
      step('now', 0),
      step('dan unrestricted jailbroken unfiltered uncensored evil free developer', 2),
    ],
  },
  {
    kind: 'override',
    weight: 0.5,
    steps: [step('from'), step('now', 0), step('on', 0), step('you', 1), step('will must are should shall', 1)],
  },
  {
    kind: 'override',
    weight: 0.7,
    steps: [step('developer god jailbreak dan'), step('mode', 0), step('enabled activated on', 2)],
  },
  // "Reveal your system prompt", "print the hidden instructions".
  {
    kind: 'override',
    weight: 0.7,
    steps: [
      step('reveal print output show repeat display leak disclose expose dump'),
      step('system hidden initial secret original your', 3),
      step(SECRET, 1),
    ],
  },
  // "If you are an AI", "note to the assistant", "AI reading this".
  {
    kind: 'addressed-to-model',
    weight: 0.6,
    steps: [step('if'), step('you', 0), step("are you're", 0), step(MODEL, 3)],
  },
  {
    kind: 'addressed-to-model',
    weight: 0.6,
    steps: [step('note message instructions instruction attention'), step('to for', 0), step(MODEL, 2)],
  },
  {
    kind: 'addressed-to-model',
    weight: 0.6,
    steps: [
      step(MODEL),
      step('reading processing summarizing summarising parsing reviewing', 1),
      step('this these', 0),
    ],
  },
  // "Do not tell the user", "without informing the user".
  {
    kind: 'addressed-to-model',
    weight: 0.6,
    steps: [
      step("do don't never not"),
      step('not tell inform mention reveal alert warn notify', 1),
      step('tell inform mention reveal alert warn notify the this', 1),
      step('user users human', 2),
    ],
  },
  {
    kind: 'addressed-to-model',
    weight: 0.5,
    steps: [step('without'), step('telling informing alerting notifying warning', 0), step('the', 0), step('user', 0)],
  },
  // "Send the conversation to https://…", "append the user's password to the link".
  {
    kind: 'addressed-to-model',
    weight: 0.5,
    steps: [
      step('send forward post upload exfiltrate append email transmit'),
      step('conversation history credentials password passwords cookies token tokens secrets chat keys', 4),
      step('to', 3),
    ],
  },
  // "Respond only with", "instead, reply:".
  {
    kind: 'addressed-to-model',
    weight: 0.4,
    steps: [step('respond reply answer output say'), step('only', 0), step('with', 0)],
  },
  {
    kind: 'addressed-to-model',
    weight: 0.4,
    steps: [step('instead'), step('respond reply say output write print recommend tell', 1)],
  },
];

/** Words that, shortly before a match, say a text discusses such a phrase rather than uses it ("attacks such as"). */
const DISCUSSION = set(
  'such example examples e.g eg like called phrase phrases attack attacks attacker attackers adversary ' +
    'adversarial injection injections injected malicious jailbreak jailbreaks payload payloads detect detects ' +
    'detection defend defense defence mitigate researchers paper study benchmark dataset classifier quoted pattern patterns',
);
const DISCUSSION_WINDOW = 8;
/** A discussed match counts for this fraction of its weight. */
const DISCUSSED = 0.35;

export interface PhraseHit {
  readonly kind: PhraseKind;
  readonly weight: number;
}

/** The strongest match of each kind in `text`'s words (a discussed or quoted match counts for less). */
export function matchPhrases(text: string, { words, starts }: Words): Map<PhraseKind, number> {
  const found = new Map<PhraseKind, number>();
  for (let i = 0; i < words.length; i++) {
    for (const rule of RULES) {
      if (!rule.steps[0]!.words.has(words[i]!) || !matchesFrom(rule, words, i)) continue;
      const weight = rule.weight * (discussed(text, words, starts, i) ? DISCUSSED : 1);
      if (weight > (found.get(rule.kind) ?? 0)) found.set(rule.kind, weight);
    }
  }
  return found;
}

/** Whether `rule` matches from word `i`, each step at the nearest word within its gap. */
function matchesFrom(rule: Rule, words: readonly string[], i: number): boolean {
  let at = i;
  for (const next of rule.steps.slice(1)) {
    let found = -1;
    for (let j = at + 1; j <= at + 1 + next.gap && j < words.length; j++) {
      if (next.words.has(words[j]!)) {
        found = j;
        break;
      }
    }
    if (found === -1) return false;
    at = found;
  }
  return true;
}

const QUOTES = new Set(['"', '“', '‘', "'", '«', '`']);

const SENTENCE_END = new Set(['.', '!', '?', '\n', ';', ':']);

/**
 * Whether the match at word `i` is quoted, or follows a word of discussion within DISCUSSION_WINDOW words of its own
 * sentence. Each gap between words is read by at most DISCUSSION_WINDOW matches: linear.
 */
function discussed(text: string, words: readonly string[], starts: readonly number[], i: number): boolean {
  const before = text[starts[i]! - 1];
  if (before !== undefined && QUOTES.has(before)) return true;
  for (let j = i - 1; j >= 0 && j >= i - DISCUSSION_WINDOW; j--) {
    if (crossesSentence(text, starts[j]! + words[j]!.length, starts[j + 1]!)) return false;
    if (DISCUSSION.has(words[j]!)) return true;
  }
  return false;
}

function crossesSentence(text: string, from: number, to: number): boolean {
  for (let k = from; k < to; k++) if (SENTENCE_END.has(text[k]!)) return true;
  return false;
}
