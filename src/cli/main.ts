// The ztc program: `serve` runs the controller, every other command manages it (locally or remotely).
import { Command, CommanderError } from 'commander';
import { ConfigError } from '../config.js';
import { ApiError } from '../model/errors.js';
import { authenticators } from '../model/resources/authenticators.js';
import { apiSessions } from '../model/resources/api-sessions.js';
import { authPolicies } from '../model/resources/auth-policies.js';
import { externalJwtSigners } from '../model/resources/external-jwt-signers.js';
import { mfaCommand } from './commands/mfa.js';
import { configs, configTypes } from '../model/resources/configs.js';
import { identityTypes } from '../model/resources/identity-types.js';
import { edgeRouterPolicies, serviceEdgeRouterPolicies, servicePolicies } from '../model/resources/policies.js';
import { routers } from '../model/resources/routers.js';
import { postureCheckTypes, postureChecks } from '../model/resources/posture-checks.js';
import { terminators } from '../model/resources/terminators.js';
import { sessions } from '../model/resources/sessions.js';
import { controllers } from '../model/resources/controllers.js';
import { dbCommand } from './commands/db.js';
import { completionCommand } from './commands/completion.js';
import { apiCommand } from './commands/api.js';
import { addIdentityNetworkCommands, edgeRouterCommand, serviceCommand } from './commands/network.js';
import { policyAdvisorCommand } from './commands/policy-advisor.js';
import { pkiCommand, statusCommand } from './commands/pki-status.js';
import { VERSION } from '../version.js';
import { resourceCommand } from './commands/resources.js';
import { caCommand, enrollCommand, enrollmentCommand, identityCommand } from './commands/pki.js';
import { serveCommand } from './commands/serve.js';
import { quickstartCommand } from './commands/quickstart.js';
import { loginCommand, logoutCommand, versionCommand } from './commands/session.js';
import { CliError } from './transport.js';
import { DataDirNotWritable } from '../server/data-dir.js';
import { DamagedDatabase } from '../store/sqlite-health.js';

export function program(): Command {
  const p = new Command('ztc')
    .description('ztc: the control plane of a zero-trust overlay network (OpenZiti Edge APIs)')
    .version(VERSION, '-V, --version')
    .showHelpAfterError()
    .exitOverride();
  p.addCommand(serveCommand());
  p.addCommand(quickstartCommand());
  p.addCommand(loginCommand());
  p.addCommand(logoutCommand());
  p.addCommand(versionCommand());
  p.addCommand(statusCommand());
  p.addCommand(pkiCommand());
  const identity = identityCommand();
  addIdentityNetworkCommands(identity);
  p.addCommand(identity);
  p.addCommand(resourceCommand(identityTypes));
  p.addCommand(resourceCommand(authenticators));
  p.addCommand(caCommand());
  p.addCommand(enrollmentCommand());
  p.addCommand(enrollCommand());
  p.addCommand(resourceCommand(authPolicies));
  p.addCommand(resourceCommand(externalJwtSigners, { enabled: true, audience: null }));
  p.addCommand(resourceCommand(apiSessions));
  p.addCommand(mfaCommand());
  p.addCommand(resourceCommand(configTypes));
  p.addCommand(resourceCommand(configs));
  p.addCommand(serviceCommand());
  p.addCommand(edgeRouterCommand());
  p.addCommand(resourceCommand(routers));
  p.addCommand(resourceCommand(edgeRouterPolicies, { semantic: 'AnyOf' }));
  p.addCommand(resourceCommand(serviceEdgeRouterPolicies, { semantic: 'AnyOf' }));
  p.addCommand(resourceCommand(servicePolicies, { semantic: 'AnyOf' }));
  p.addCommand(policyAdvisorCommand());
  p.addCommand(resourceCommand(postureCheckTypes));
  p.addCommand(resourceCommand(postureChecks));
  p.addCommand(resourceCommand(terminators));
  p.addCommand(resourceCommand(sessions));
  p.addCommand(resourceCommand(controllers));
  p.addCommand(dbCommand());
  p.addCommand(apiCommand());
  p.addCommand(completionCommand(program));
  return p;
}

export async function main(argv = process.argv) {
  // `ztc identity list | head`: a closed pipe ends the program quietly.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
  try {
    await program().parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) process.exit(err.exitCode);
    if (err instanceof CliError || err instanceof ConfigError) {
      process.stderr.write(`error: ${err.message}\n`);
      process.exit(err instanceof CliError ? err.exitCode : 2);
    }
    // Problems the operator fixes (a damaged database, a read-only data dir): the message, not a stack.
    if (err instanceof DamagedDatabase || err instanceof DataDirNotWritable) {
      process.stderr.write(`error: ${err.message}\n`);
      process.exit(1);
    }
    if (err instanceof ApiError) {
      process.stderr.write(`error: ${err.message} [${err.code}]\n`);
      process.exit(1);
    }
    process.stderr.write(`error: ${(err as Error)?.stack ?? String(err)}\n`);
    process.exit(1);
  }
}

