// The data plane's logger: what its rooms write through (worker.ts hands the lines to the main thread).
export interface FabricLog {
  info(o: object, msg: string): void;
  warn(o: object, msg: string): void;
  debug(o: object, msg: string): void;
}
