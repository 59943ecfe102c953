// Questions on the terminal: a line, or a secret that is not echoed.
import readline from 'node:readline';
import { CliError } from './errors.js';

export async function ask(question: string): Promise<string> {
  const rl = readline.createInterface({ input: process.stdin, output: process.stderr });
  try {
    return await new Promise((resolve) => rl.question(question, resolve));
  } finally {
    rl.close();
  }
}

/** Ask without echoing what is typed (the prompt itself is shown). */
export async function askSecret(question: string): Promise<string> {
  const out = process.stderr;
  const rl = readline.createInterface({ input: process.stdin, output: out, terminal: true });
  // Readline echoes through _writeToOutput: keep the prompt, drop the typed characters.
  const r = rl as unknown as { _writeToOutput: (s: string) => void };
  let prompting = true;
  r._writeToOutput = (s: string) => {
    if (prompting) out.write(s);
  };
  try {
    return await new Promise((resolve) => {
      rl.question(question, resolve);
      prompting = false;
    });
  } finally {
    rl.close();
    out.write('\n');
  }
}

/** A new password, typed twice without echo; two different answers change nothing. */
export async function askNewPassword(): Promise<string> {
  const password = await askSecret('New password: ');
  if (password && (await askSecret('Again: ')) !== password) throw new CliError('The two passwords differ: nothing was changed, run the command again');
  return password;
}
