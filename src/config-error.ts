// A bad setting (flag, environment variable or config file). Its own module so the CLI can
// recognise it without loading the config parser.
export class ConfigError extends Error {}
