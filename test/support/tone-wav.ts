// Small WAV uploads for tests that need audio but not a recording.

/** A mono 16-bit PCM WAV (16 kHz) of `seconds` of a 440 Hz tone, made in memory. */
export function toneWav(seconds: number): Buffer {
  const rate = 16_000;
  const samples = Buffer.alloc(rate * seconds * 2);
  for (let i = 0; i < rate * seconds; i++)
    samples.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / rate)), i * 2);
  const header = Buffer.alloc(44);
  header.write('RIFF', 0);
  header.writeUInt32LE(36 + samples.length, 4);
  header.write('WAVEfmt ', 8);
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(1, 22);
  header.writeUInt32LE(rate, 24);
  header.writeUInt32LE(rate * 2, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36);
  header.writeUInt32LE(samples.length, 40);
  return Buffer.concat([header, samples]);
}
