/**
 * Real music for the audio benches, from Debian's game music packages (ogg Vorbis, 44.1 kHz stereo, composed and
 * mixed by people, orchestral pieces with quiet intros and loud tutti): installed, not kept in git
 * (`apt-get install wesnoth-1.16-music hyperrogue-music`). Each excerpt is decoded to a 16-bit stereo WAV, as a
 * lossless master would be uploaded. Two sets: `tuning`, the excerpts strength changes are tried on, and
 * `judging`, excerpts never used for that (other pieces, and another composer's package).
 */
import { access } from 'node:fs/promises';
import { runFfmpeg } from '@cairn/media';

const WESNOTH = '/usr/share/games/wesnoth/1.16/data/core/music';
const HYPERROGUE = '/usr/share/hyperrogue/music';

/** [file, start second]; loudness range (EBU R128 LRA, first 40–60 s) in the comment. */
const SETS = {
  tuning: [
    [`${WESNOTH}/battle-epic.ogg`, 0],
    [`${WESNOTH}/the_king_is_dead.ogg`, 30],
    [`${WESNOTH}/silvan_sanctuary.ogg`, 0],
  ],
  judging: [
    [`${WESNOTH}/wanderer.ogg`, 0], // LRA 10.6 LU
    [`${WESNOTH}/elvish-theme.ogg`, 0], // 7.4 LU
    [`${HYPERROGUE}/hr3-jungle.ogg`, 0], // 14.6 LU
    [`${HYPERROGUE}/hr3-motion.ogg`, 0], // 7.4 LU
  ],
} as const satisfies Record<string, ReadonlyArray<readonly [string, number]>>;

export type MusicSet = keyof typeof SETS;

/** The set's excerpts of `seconds` as WAV files; throws with the install line when a package is missing. */
export async function realMusic(set: MusicSet, seconds: number): Promise<Array<{ name: string; bytes: Buffer }>> {
  const out: Array<{ name: string; bytes: Buffer }> = [];
  for (const [path, start] of SETS[set]) {
    await access(path).catch(() => {
      throw new Error(`${path} is missing: apt-get install wesnoth-1.16-music hyperrogue-music`);
    });
    const bytes = await runFfmpeg({
      args: ['-ss', String(start), '-t', String(seconds), '-i', path, '-c:a', 'pcm_s16le', '-f', 'wav', 'pipe:1'],
    });
    const name = path.split('/').pop()!.replace('.ogg', '');
    out.push({ name: `${set}: ${name} @${start} s, ${seconds} s stereo 44.1k`, bytes });
  }
  return out;
}
