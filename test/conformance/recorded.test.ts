import { createReadStream, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import { normativeViolation } from './normative.js';
import { unprefixedFields } from './vendor-prefix.js';

/**
 * Every frame `npm test` saw the server emit, recorded there under RCP_RECORD_FRAMES=DIR, validates against the
 * normative rcp-1.0.json too, and names nothing outside the spec without the x- prefix (§6.2, vendor-prefix.ts).
 * RCP_RECORDED_FRAMES names that folder here (CI passes the one its `npm test` wrote).
 */
const DIR = process.env.RCP_RECORDED_FRAMES === undefined ? undefined : resolve(process.env.RCP_RECORDED_FRAMES);

function recordedSuite(dir: string): void {
  describe('the frames npm test recorded (RCP_RECORDED_FRAMES)', () => {
    it('each validates against rcp-1.0.json', { timeout: 600_000 }, async () => {
      const files = readdirSync(dir).filter((name) => name.endsWith('.ndjson'));
      expect(files.length, `no recorded frames in ${dir}`).toBeGreaterThan(0);
      let frames = 0;
      const violations: string[] = [];
      const unprefixed = new Set<string>();
      for (const name of files) {
        const lines = createInterface({ input: createReadStream(join(dir, name)), crlfDelay: Infinity });
        for await (const line of lines) {
          const { method, frame } = JSON.parse(line) as { method?: string; frame: unknown };
          frames++;
          const violation = normativeViolation(frame, method);
          if (violation !== undefined && violations.length < 20) violations.push(`${violation}\n${line.slice(0, 500)}`);
          for (const name of unprefixedFields(frame, method)) unprefixed.add(name);
        }
      }
      expect(violations).toEqual([]);
      expect([...unprefixed]).toEqual([]);
      expect(frames).toBeGreaterThan(1000);
      process.stdout.write(`${frames} recorded frames from ${files.length} files validate against rcp-1.0.json\n`);
    });
  });
}

// Only what can run is declared: without a recording, one skipped test says what is missing.
if (DIR !== undefined) recordedSuite(DIR);
else {
  describe('the frames npm test recorded', () => {
    it.skip('need RCP_RECORDED_FRAMES=<the folder `RCP_RECORD_FRAMES=DIR npm test` wrote>', () => undefined);
  });
}
