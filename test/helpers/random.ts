/** mulberry32: a tiny seeded generator, uniform in [0, 1), so a failing case can be replayed from its seed (the one
 * the evaluation's bootstrap uses). */
export { seededRandom as mulberry32 } from '../../src/retrieval/calibration.js';
