/**
 * `npm run bench -- injection`: the injection screen (src/corpus/screen/, docs/trust.md) on the labelled set
 * (test/fixtures/injection-set.json, scripts/injection-set.ts): precision and recall at the default threshold, per
 * kind; then its false-positive rate on BEIR SciFact's 5,183 abstracts (all clean text, none tuned for), with the
 * time it takes per megabyte.
 */
import { readFileSync } from 'node:fs';
import { defaultConfig } from '../src/config/index.js';
import { screenText } from '../src/corpus/screen/screen.js';
import type { Labelled } from '../scripts/injection-set.js';
import { SET_FILE } from '../scripts/injection-set.js';
import { corpus } from './scifact.js';

const THRESHOLD = defaultConfig().retrieve.injection.threshold;

export function benchInjection(): void {
  const set = JSON.parse(readFileSync(SET_FILE, 'utf8')) as Labelled[];
  const flagged = (text: string) => screenText(text).score <= THRESHOLD;
  let truePositives = 0;
  let falsePositives = 0;
  const kinds = new Map<string, { n: number; flagged: number }>();
  for (const passage of set) {
    const flag = flagged(passage.text);
    if (flag && passage.injected) truePositives++;
    if (flag && !passage.injected) falsePositives++;
    const kind = kinds.get(passage.kind) ?? { n: 0, flagged: 0 };
    kinds.set(passage.kind, { n: kind.n + 1, flagged: kind.flagged + (flag ? 1 : 0) });
  }
  const injected = set.filter((passage) => passage.injected).length;
  console.log(`Injection screen on the labelled set (${set.length - injected} clean, ${injected} injected)`);
  console.log(
    `  precision ${(truePositives / (truePositives + falsePositives)).toFixed(3)}  recall ` +
      `${(truePositives / injected).toFixed(3)}  (threshold ${THRESHOLD})`,
  );
  for (const [kind, { n, flagged: count }] of kinds) console.log(`  ${kind.padEnd(20)} ${count}/${n} flagged`);
  const docs = corpus();
  const started = performance.now();
  const screens = docs.map((doc) => ({ id: doc.id, screen: screenText(doc.text) }));
  const ms = performance.now() - started;
  const megabytes = docs.reduce((sum, doc) => sum + Buffer.byteLength(doc.text), 0) / 2 ** 20;
  const positives = screens.filter(({ screen }) => screen.score <= THRESHOLD);
  const signalled = screens.filter(({ screen }) => screen.signals.length > 0);
  console.log(
    `SciFact (${docs.length} abstracts, ${megabytes.toFixed(1)} MiB): ${positives.length} flagged ` +
      `(false-positive rate ${((100 * positives.length) / docs.length).toFixed(2)}%), ${signalled.length} with ` +
      `any signal; ${(ms / megabytes).toFixed(0)} ms per MiB`,
  );
  for (const { id, screen } of signalled.slice(0, 10))
    console.log(`  ${id}: ${screen.score} ${screen.signals.join(', ')}`);
}
