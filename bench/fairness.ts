/**
 * `npm run bench -- fairness`: callers take turns at the dense index (§15.5). A real server with API keys and 1,000
 * generated documents; a polite client runs dense retrieves alone, then beside 32 concurrent loops of heavy dense
 * retrieves (k 200, candidateK 1000). Twice in the same run: the attacker under its own key (its own lane), and under
 * the polite client's key (one caller, one lane: first come, first served, as every search was before lanes). The
 * figure is the polite rate as a ratio of its rate alone.
 */
import { call, sentence, start } from './isolation.js';

const KEYS = {
  polite: 'bench-polite-key-0123456789',
  attacker: 'bench-attacker-key-0123456',
  admin: 'bench-admin-key-01234567',
};
const SECONDS = 10;
const ATTACKERS = 32;

async function politeRate(origin: string, seconds: number): Promise<number> {
  const until = performance.now() + seconds * 1000;
  let ok = 0;
  for (let i = 0; performance.now() < until; i++) {
    const answer = await call(origin, 'retrieve', { query: sentence(i, 8), k: 10, mode: 'dense' }, KEYS.polite);
    if (answer.ok) ok++;
  }
  return ok / seconds;
}

async function beside(origin: string, attackerKey: string): Promise<number> {
  const until = performance.now() + SECONDS * 1000;
  const heavy = { query: sentence(3, 12), k: 200, candidateK: 1000, mode: 'dense' };
  const loops = Array.from({ length: ATTACKERS }, async () => {
    while (performance.now() < until) await call(origin, 'retrieve', heavy, attackerKey);
  });
  const rate = await politeRate(origin, SECONDS);
  await Promise.all(loops);
  return rate;
}

export async function benchFairness(): Promise<void> {
  const keys = [
    { key: KEYS.polite, scopes: ['read'] },
    { key: KEYS.attacker, scopes: ['read'] },
    { key: KEYS.admin, scopes: ['admin'] },
  ];
  const server = await start({ RCP_API_KEYS: JSON.stringify(keys) }, KEYS.admin);
  try {
    for (let batch = 0; batch < 4; batch++) {
      const documents = Array.from({ length: 250 }, (_, i) => ({
        id: `d${batch * 250 + i}`,
        text: sentence(batch * 250 + i, 60),
      }));
      await call(server.origin, 'index/add', { documents }, KEYS.admin);
    }
    const alone = await politeRate(server.origin, SECONDS);
    const ownLane = await beside(server.origin, KEYS.attacker);
    const sameLane = await beside(server.origin, KEYS.polite);
    console.log(
      `\nfairness: a polite client's dense retrieves beside ${ATTACKERS} concurrent heavy dense retrieves (${SECONDS} s each)`,
    );
    console.log(`  alone                              ${alone.toFixed(1).padStart(7)} /s   ratio 1.000`);
    console.log(
      `  attacker under its own key         ${ownLane.toFixed(1).padStart(7)} /s   ratio ${(ownLane / alone).toFixed(3)}`,
    );
    console.log(
      `  attacker under the polite key      ${sameLane.toFixed(1).padStart(7)} /s   ratio ${(sameLane / alone).toFixed(3)}`,
    );
  } finally {
    await server.stop();
  }
}
