import type { Command } from 'commander';

export interface CommonOpts {
  dataDir?: string;
  config?: string;
  /** With --data-dir: the controller's PostgreSQL database (its data dir still holds the PKI). */
  db?: string;
  profile?: string;
  output?: string;
}

/** Where a command acts (local data dir or saved profile) and how it prints. */
export function targetOptions(cmd: Command): Command {
  return cmd
    .option('-d, --data-dir <dir>', 'work on this local data dir directly (no server needed)')
    .option('--config <file>', 'controller config file (implies local mode)')
    .option('--db <url>', "with -d, on a controller that runs on PostgreSQL: its postgres://... database (env ZTC_DB)")
    .option('--profile <name>', 'saved login to use (see ztc login)')
    .option('-o, --output <format>', 'table, json or yaml', 'table');
}
