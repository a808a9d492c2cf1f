import { parseCommandLine } from './cli.js';
import { backupCommand } from './cli/commands/backup.js';
import { configCommand } from './cli/commands/config.js';
import { corpusCommand } from './cli/commands/corpus.js';
import { evalCommand } from './cli/commands/eval.js';
import { gatewayCommand } from './cli/commands/gateway.js';
import { ingestCommand } from './cli/commands/ingest.js';
import { mcpCommand } from './cli/commands/mcp.js';
import { modelsCommand } from './cli/commands/models.js';
import { serveCommand } from './cli/commands/serve.js';
import { StartupError } from './startup-error.js';

/**
 * Process entry: parse the command line, run the command (src/cli/commands/, one file each), turn what stopped it
 * into an exit code. On stdio, stdout carries protocol frames only (§5.1), so every log line goes to stderr.
 */
export async function main(argv: readonly string[]): Promise<number> {
  try {
    return await dispatch(parseCommandLine(argv));
  } catch (error) {
    return reported(error);
  }
}

/**
 * The one place start-up errors are reported: a StartupError's line on stderr and its exit code. Anything else is a
 * defect, thrown on (a stack, exit 1).
 */
function reported(error: unknown): number {
  if (!(error instanceof StartupError)) throw error;
  process.stderr.write(`rcp-server: ${error.message}\n`);
  return error.exitCode;
}

async function dispatch(command: ReturnType<typeof parseCommandLine>): Promise<number> {
  switch (command.command) {
    case 'help':
      process.stderr.write(command.text);
      return 0;
    case 'models':
      return modelsCommand(command);
    case 'ingest':
      return ingestCommand(command);
    case 'eval':
      return evalCommand(command);
    case 'config':
      return configCommand(command);
    case 'backup':
    case 'restore':
    case 'export':
      return backupCommand(command);
    case 'gateway':
      return gatewayCommand(command);
    case 'mcp':
      return mcpCommand(command);
    case 'corpus':
      return corpusCommand(command);
    case 'serve':
      return serveCommand(command);
  }
}
