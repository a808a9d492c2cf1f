/**
 * `npm run bench`: every benchmark in bench/, each printing ratios against a baseline measured in the same run
 * (these machines are noisy, so absolute figures mean little on their own).
 */
import { benchProtocol } from './protocol.js';

await benchProtocol();
