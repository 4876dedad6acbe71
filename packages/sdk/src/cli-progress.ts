// Progress on the terminal for the CLI (Node only): a bar for bytes going up, a line for a job being waited on.
import type { UploadProgress } from './body.js';
import type { Job } from './types.js';

export interface ProgressSink {
  /** Writes without a newline; a bar redraws itself with a carriage return. */
  write: (text: string) => void;
  /** A terminal: redraw in place. Otherwise (a log, a pipe) one line per quarter, so logs stay short. */
  live: boolean;
}

const WIDTH = 24;

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 * 1024 * 1024) return `${(n / 1024 / 1024).toFixed(1)} MiB`;
  return `${(n / 1024 / 1024 / 1024).toFixed(2)} GiB`;
}

export function bar(fraction: number): string {
  const filled = Math.round(Math.min(1, Math.max(0, fraction)) * WIDTH);
  return `[${'#'.repeat(filled)}${'.'.repeat(WIDTH - filled)}]`;
}

/** A listener for upload progress that draws `label [####....] 42% 1.2 MiB / 2.9 MiB`. */
export function uploadBar(sink: ProgressSink, label: string): (progress: UploadProgress) => void {
  let lastQuarter = -1;
  let lastDraw = 0;
  return ({ sent, total }) => {
    const fraction = total > 0 ? sent / total : 1;
    const percent = Math.floor(fraction * 100);
    const line = `${label} ${bar(fraction)} ${String(percent).padStart(3)}% ${formatBytes(sent)} / ${formatBytes(total)}`;
    if (sink.live) {
      // Redrawn at most every 100 ms, and always at the end.
      const now = Date.now();
      if (sent < total && now - lastDraw < 100) return;
      lastDraw = now;
      sink.write(`\r${line}\u001b[K${sent >= total ? '\n' : ''}`);
      return;
    }
    const quarter = Math.floor(fraction * 4);
    if (quarter === lastQuarter) return;
    lastQuarter = quarter;
    sink.write(`${line}\n`);
  };
}

/** A running job's step and share done, e.g. ` watermarking 42%`; empty when it has not reported any. */
function progressText(job: Job): string {
  if (job.status !== 'running' || !job.progress) return '';
  return ` ${job.progress.stage} ${Math.floor(Math.min(1, Math.max(0, job.progress.fraction)) * 100)}%`;
}

/** A listener for a job's polls: its state, how far it is, and how long it has been waited on. */
export function jobLine(sink: ProgressSink, label: string): (job: Job) => void {
  const started = Date.now();
  let lastState = '';
  const spinner = ['|', '/', '-', '\\'];
  let tick = 0;
  return (job) => {
    const seconds = Math.round((Date.now() - started) / 1000);
    const finished = job.status === 'done' || job.status === 'failed';
    const state = `${job.status}${progressText(job)}`;
    if (sink.live) {
      const mark = finished ? ' ' : spinner[tick++ % spinner.length];
      sink.write(`\r${label} ${mark} job ${job.job_id} ${state} (${seconds} s)\u001b[K${finished ? '\n' : ''}`);
      return;
    }
    // A log gets a line when the status or the step changes (not every percent).
    const step = `${job.status} ${job.status === 'running' ? (job.progress?.stage ?? '') : ''}`;
    if (step === lastState) return;
    lastState = step;
    sink.write(`${label}: job ${job.job_id} ${state} (${seconds} s)\n`);
  };
}
