import { describe, expect, it } from 'vitest';
import { ACCEPTED, REJECTED } from '../../../fixtures/frame-cases.js';
import { frameViolation } from '../../../helpers/schema.js';

/**
 * The project's schemas of what a server emits (src/protocol/schemas), which every wire test applies to every frame:
 * they admit what the spec allows and refuse what it rules out.
 */
describe('the schemas of emitted frames', () => {
  it.each(ACCEPTED)('admit %s', (_name, frame, method) => {
    expect(frameViolation(frame, method)).toBeUndefined();
  });

  it.each(REJECTED)('refuse %s', (_name, frame, method) => {
    expect(frameViolation(frame, method)).toBeDefined();
  });
});
