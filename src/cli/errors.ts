// The CLI's own error: a message for a person and an exit code. Kept apart from transport.ts so
// that light commands (version, --help) can throw it without loading the HTTP or server code.
export class CliError extends Error {
  constructor(message: string, readonly exitCode = 1) {
    super(message);
  }
}
