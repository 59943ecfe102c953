import type { Command } from 'commander';

export interface CommonOpts {
  dataDir?: string;
  config?: string;
  profile?: string;
  output?: string;
}

/** Where a command acts (local data dir or saved profile) and how it prints. */
export function targetOptions(cmd: Command): Command {
  return cmd
    .option('-d, --data-dir <dir>', 'work on this local data dir directly (no server needed)')
    .option('--config <file>', 'controller config file (implies local mode)')
    .option('--profile <name>', 'saved login to use (see ztc login)')
    .option('-o, --output <format>', 'table, json or yaml', 'table');
}
