// The events file: one JSON object a line, appended off the request path. emit() only pushes a line
// onto a buffer; a timer (or a full buffer) writes the buffer in one append, one write at a time, so
// no request ever waits on the disk. At maxBytes the file is rotated: FILE -> FILE.1 -> ... -> FILE.keep,
// the oldest dropped. A disk slower than the events (or full) costs memory up to a bound, then the
// oldest unwritten lines, counted in a line of their own when writing resumes.
import fs from 'node:fs';
import path from 'node:path';

export interface FileSinkOptions {
  file: string;
  /** Rotate when the file would grow past this many bytes. */
  maxBytes: number;
  /** Rotated files kept beside the current one. */
  keep: number;
  /** How long a line may wait in the buffer. */
  flushMs?: number;
}

const MAX_BUFFERED_LINES = 50_000;
const FLUSH_AT_BYTES = 256 * 1024;

export class FileSink {
  private lines: string[] = [];
  private bytes = 0;
  private dropped = 0;
  private size = -1;
  private timer?: NodeJS.Timeout;
  private writing?: Promise<void>;
  /** The file kept open between writes (opening it for every append cost the bench's profile more than the writes). */
  private fh?: fs.promises.FileHandle;
  /** The last write failure, for the health check and the log (the sink keeps trying). */
  lastError?: string;

  constructor(private readonly o: FileSinkOptions) {
    fs.mkdirSync(path.dirname(o.file), { recursive: true });
  }

  write(line: string) {
    this.writeLines([line]);
  }

  /** Queue lines (one event each, without their newline) for the next append. */
  writeLines(lines: readonly string[]) {
    for (const line of lines) {
      if (this.lines.length >= MAX_BUFFERED_LINES) {
        this.bytes -= this.lines.shift()!.length + 1;
        this.dropped++;
      }
      this.lines.push(line);
      // Characters, not bytes: a bound for when to write, which need not be exact (byteLength costs a pass over each line).
      this.bytes += line.length + 1;
    }
    if (this.bytes >= FLUSH_AT_BYTES) void this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), this.o.flushMs ?? 200);
      this.timer.unref();
    }
  }

  /** Write what is buffered (waits for a write already under way first). */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    while (this.writing) await this.writing;
    if (!this.lines.length && !this.dropped) return;
    const lines = this.lines;
    if (this.dropped) lines.unshift(JSON.stringify({ namespace: 'ztc.events', event_type: 'dropped', timestamp: new Date().toISOString(), count: this.dropped }));
    this.lines = [];
    this.bytes = 0;
    this.dropped = 0;
    this.writing = this.append(lines).finally(() => (this.writing = undefined));
    await this.writing;
  }

  private async append(lines: string[]) {
    try {
      if (this.size < 0) this.size = await fs.promises.stat(this.o.file).then((s) => s.size, () => 0);
      // Lines go to the current file until the next would pass the size, then the file rotates. The
      // chunk's size is kept as it grows (measuring the whole chunk for every line made a busy batch quadratic).
      let chunk: string[] = [];
      let chunkBytes = 0;
      for (const line of lines) {
        const add = Buffer.byteLength(line) + 1;
        if (this.size + chunkBytes + add > this.o.maxBytes && this.size + chunkBytes > 0) {
          if (chunk.length) await this.append1(chunk.join(''));
          await this.rotate();
          chunk = [];
          chunkBytes = 0;
        }
        chunk.push(line, '\n');
        chunkBytes += add;
      }
      if (chunk.length) {
        await this.append1(chunk.join(''));
        this.size += chunkBytes;
      }
      this.lastError = undefined;
    } catch (err) {
      this.lastError = (err as Error).message;
      this.size = -1;
      await this.closeFile();
    }
  }

  private async append1(text: string) {
    this.fh ??= await fs.promises.open(this.o.file, 'a', 0o600);
    await this.fh.appendFile(text);
  }

  private async closeFile() {
    const fh = this.fh;
    this.fh = undefined;
    await fh?.close().catch(() => {});
  }

  private async rotate() {
    await this.closeFile();
    const f = this.o.file;
    if (this.o.keep < 1) await fs.promises.rm(f, { force: true });
    else {
      await fs.promises.rm(`${f}.${this.o.keep}`, { force: true });
      for (let i = this.o.keep - 1; i >= 1; i--) await fs.promises.rename(`${f}.${i}`, `${f}.${i + 1}`).catch(() => {});
      await fs.promises.rename(f, `${f}.1`).catch(() => {});
    }
    this.size = 0;
  }

  async close() {
    await this.flush();
    await this.closeFile();
  }
}
