// `ztc fabric routers|links|circuits|terminators|services [filter]`: the network as the routers and the
// control channel see it, read from the Fabric API (/fabric/v1), as upstream's `ziti fabric list` shows it.
import { Command } from 'commander';
import { cliResource } from '../manifest.js';
import { listCommand } from './resources.js';

const FABRIC = '/fabric/v1';

export async function fabricCommand(): Promise<Command> {
  const cmd = new Command('fabric').description('routers, links, circuits and terminators as the routers report them (the Fabric API)');
  const kinds: [string, string[], string][] = [
    ['routers', ['id', 'name', 'connected', 'cost', 'noTraversal', 'listeners=listenerAddresses.address'], 'every router, whether connected to a controller, and the link listeners it announced'],
    ['links', (await cliResource('links')).columns, 'links between routers: who dialed whom, over what, at what cost'],
    ['circuits', (await cliResource('circuits')).columns, 'circuits in progress: service, client, and the routers and links they cross'],
    ['terminators', (await cliResource('terminators')).columns, 'where services leave the network: router, binding, address'],
    ['services', (await cliResource('services')).columns, 'services'],
  ];
  for (const [plural, columns, about] of kinds) listCommand(cmd.command(plural).description(`${about} (optionally with a filter)`), { plural, columns }, `${FABRIC}/${plural}`);
  return cmd;
}
