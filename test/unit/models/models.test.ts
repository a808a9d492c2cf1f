import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import { intraOpThreads } from '../../../src/models/models.js';

describe('models.intraOpThreads', () => {
  // onnxruntime's own default counts physical cores, and ran on one thread of a 2-vCPU container: 0 must not reach it.
  it('0 (the default) is one thread per core the process may use, not onnxruntime own choice', () => {
    expect(intraOpThreads(0)).toBe(availableParallelism());
  });

  it('a set value is used as it is', () => {
    expect(intraOpThreads(1)).toBe(1);
    expect(intraOpThreads(7)).toBe(7);
  });
});
