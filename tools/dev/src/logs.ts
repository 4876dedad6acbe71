/**
 * The services write pino JSON lines. In a terminal nine interleaved streams of JSON are hard to read, so
 * each line is shown compactly as `HH:MM:SS level msg key=value ...` behind the service's name.
 */

const PINO_LEVELS: Record<number, string> = {
  10: 'trace',
  20: 'debug',
  30: 'info',
  40: 'warn',
  50: 'error',
  60: 'fatal',
};

/** Fields every line has (or that the prefix already says): not repeated after the message. */
const OMITTED = new Set(['level', 'time', 'msg', 'service', 'pid', 'hostname', 'v']);

const ANSI = { reset: '\x1b[0m', dim: '\x1b[2m', red: '\x1b[31m', yellow: '\x1b[33m', magenta: '\x1b[35m' } as const;
const NAME_COLORS = [
  '\x1b[36m',
  '\x1b[32m',
  '\x1b[34m',
  '\x1b[35m',
  '\x1b[33m',
  '\x1b[96m',
  '\x1b[92m',
  '\x1b[94m',
  '\x1b[95m',
];

export interface FormatOptions {
  color: boolean;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function levelName(level: unknown): string | undefined {
  if (typeof level === 'string') return level;
  if (typeof level === 'number') return PINO_LEVELS[level] ?? String(level);
  return undefined;
}

function clock(time: unknown): string {
  const date = typeof time === 'string' || typeof time === 'number' ? new Date(time) : new Date();
  const valid = Number.isNaN(date.getTime()) ? new Date() : date;
  return valid.toTimeString().slice(0, 8);
}

function value(v: unknown): string {
  if (typeof v === 'string') return /^[^\s"=]+$/.test(v) ? v : JSON.stringify(v);
  if (typeof v === 'number' || typeof v === 'boolean' || v === null) return String(v);
  if (v === undefined) return 'undefined';
  return JSON.stringify(v);
}

function paint(text: string, code: string, options: FormatOptions): string {
  return options.color ? `${code}${text}${ANSI.reset}` : text;
}

function levelColor(level: string): string | undefined {
  if (level === 'error' || level === 'fatal') return ANSI.red;
  if (level === 'warn') return ANSI.yellow;
  if (level === 'debug' || level === 'trace') return ANSI.dim;
  return undefined;
}

/**
 * One pino JSON line → one or more readable lines (an error's stack follows on its own lines). Anything that
 * is not a pino line is returned as it is.
 */
export function formatLogLine(line: string, options: FormatOptions): string[] {
  if (!line.startsWith('{')) return [line];
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    return [line];
  }
  if (!isRecord(parsed)) return [line];
  const level = levelName(parsed.level);
  if (level === undefined || typeof parsed.msg !== 'string') return [line];

  const fields: string[] = [];
  let stack: string[] = [];
  for (const [key, v] of Object.entries(parsed)) {
    if (OMITTED.has(key)) continue;
    if ((key === 'err' || key === 'error') && isRecord(v)) {
      fields.push(`${key}=${value(v.message ?? v.type ?? v)}`);
      if ((level === 'error' || level === 'fatal') && typeof v.stack === 'string')
        stack = v.stack
          .split('\n')
          .slice(1)
          .map((s) => `    ${s.trim()}`);
      continue;
    }
    fields.push(`${key}=${value(v)}`);
  }
  const color = levelColor(level);
  const head = `${paint(clock(parsed.time), ANSI.dim, options)} ${color ? paint(level.padEnd(5), color, options) : level.padEnd(5)} ${parsed.msg}`;
  const rest = fields.length ? ` ${paint(fields.join(' '), ANSI.dim, options)}` : '';
  return [`${head}${rest}`, ...stack.map((s) => paint(s, ANSI.dim, options))];
}

/** `gateway     │ ` with a stable colour per service. */
export function servicePrefix(name: string, index: number, width: number, options: FormatOptions): string {
  const label = name.padEnd(width);
  const code = NAME_COLORS[index % NAME_COLORS.length] ?? ANSI.magenta;
  return `${paint(label, code, options)} │ `;
}

/** The last lines a process wrote, shown again when it dies. */
export class Tail {
  private readonly lines: string[] = [];

  constructor(private readonly size: number) {}

  push(line: string): void {
    this.lines.push(line);
    if (this.lines.length > this.size) this.lines.shift();
  }

  get(): readonly string[] {
    return this.lines;
  }
}
