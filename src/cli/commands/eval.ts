import type { EvalCommand } from '../../cli.js';
import { evaluate, writeReport } from '../../eval.js';
import { openQuietApp } from '../startup.js';

/** `rcp-server eval`: judged queries through retrieve on an in-process session of the configured server. */
export async function evalCommand(command: EvalCommand): Promise<number> {
  const { app } = await openQuietApp(command.configFile, command.overrides);
  try {
    await app.corpus?.ready;
    const report = await evaluate(app, command.queries, command.qrels, command.params);
    process.stdout.write(
      `${report.queries} queries  nDCG@10 ${report.ndcg10.toFixed(4)}  Recall@100 ${report.recall100.toFixed(4)}  ` +
        `MRR@10 ${report.mrr10.toFixed(4)}  (p50 ${report.latencyMsP50.toFixed(1)} ms)  ${JSON.stringify(report.params)}\n`,
    );
    if (command.report !== undefined) await writeReport(command.report, report);
    return 0;
  } finally {
    await app.close();
  }
}
