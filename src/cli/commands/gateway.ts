import type { GatewayCommand } from '../../cli.js';
import { readRegistry } from '../../gateway/engine-registry.js';
import { createGateway } from '../../gateway/gateway.js';
import { serveApp, startLogged, withTracing } from '../serving.js';

/** `rcp-server gateway`: the registry's engines federated behind one server (§16). */
export async function gatewayCommand(command: GatewayCommand): Promise<number> {
  const { config, log } = startLogged(command);
  const specs = readRegistry(command.registry);
  return withTracing(config, log, async () => {
    const app = await createGateway(config, specs, log, command.select === 'primary' ? 'select' : 'federate');
    return serveApp(app, command.transport, log);
  });
}
