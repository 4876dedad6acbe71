import { describe, expect, it } from '@jest/globals';
import { jobLine } from '../src/cli-progress.js';
import type { Job, JobProgress } from '../src/types.js';

const job = (status: string, progress?: Omit<JobProgress, 'updated_at'>): Job => ({
  job_id: 'j_1',
  status,
  poll_url: 'https://cairn.example/v1/jobs/j_1',
  ...(progress ? { progress: { ...progress, updated_at: '2026-11-24T15:00:00.000Z' } } : {}),
});

const polls: Job[] = [
  job('queued'),
  job('running'),
  job('running', { stage: 'reading', fraction: 0 }),
  job('running', { stage: 'watermarking', fraction: 0.1 }),
  job('running', { stage: 'watermarking', fraction: 0.55 }),
  job('running', { stage: 'signing', fraction: 1 }),
  job('done', { stage: 'storing', fraction: 1 }),
];

describe('the CLI’s line for a job it waits on', () => {
  it('in a log: a line per status or step, with the share done', () => {
    const lines: string[] = [];
    const listener = jobLine({ live: false, write: (text) => lines.push(text) }, 'clip.mp4');
    for (const poll of polls) listener(poll);
    expect(lines.map((l) => l.replace(/ \(\d+ s\)\n$/, ''))).toEqual([
      'clip.mp4: job j_1 queued',
      'clip.mp4: job j_1 running',
      'clip.mp4: job j_1 running reading 0%',
      'clip.mp4: job j_1 running watermarking 10%',
      'clip.mp4: job j_1 running signing 100%',
      'clip.mp4: job j_1 done',
    ]);
  });

  it('on a terminal: every poll redraws the line with the percentage', () => {
    const lines: string[] = [];
    const listener = jobLine({ live: true, write: (text) => lines.push(text) }, 'clip.mp4');
    for (const poll of polls) listener(poll);
    expect(lines[4]).toMatch(/^\rclip\.mp4 . job j_1 running watermarking 55% \(\d+ s\)/);
    expect(lines.at(-1)).toMatch(/job j_1 done \(\d+ s\)\u001b\[K\n$/);
  });
});
