import { describe, expect, it } from '@jest/globals';
import { readFile } from 'node:fs/promises';
import sharp from 'sharp';
import { sniffMediaType } from '../src/index.js';
import { SHARED_DIR } from '../../testing/src/shared.js';

const photos = `${SHARED_DIR}/fixtures/photos`;
const peer = `${SHARED_DIR}/fixtures/c2pa-rs`;

describe('sniffMediaType', () => {
  it('decides by content: a PNG named .jpg is PNG', async () => {
    const png = await readFile(`${photos}/astronaut.png`);
    expect(sniffMediaType(png)?.mediaType).toBe('image/png');
    const jpeg = await sharp(png).jpeg().toBuffer();
    const webp = await sharp(png).webp().toBuffer();
    expect(sniffMediaType(jpeg)).toEqual({ mediaType: 'image/jpeg', modality: 'image', extension: 'jpg' });
    expect(sniffMediaType(webp)?.mediaType).toBe('image/webp');
  });

  it('knows the peer corpus files', async () => {
    expect(sniffMediaType(await readFile(`${peer}/CA.jpg`))?.mediaType).toBe('image/jpeg');
    expect(sniffMediaType(await readFile(`${peer}/sample1.wav`))?.mediaType).toBe('audio/wav');
    expect(sniffMediaType(await readFile(`${peer}/nested_moov_1000.mp4`))?.modality).toBe('video');
  });

  it.each([
    ['FLAC', Buffer.from('fLaC\0\0\0\x22'), 'audio/flac'],
    ['Ogg', Buffer.from('OggS\0\x02'), 'audio/ogg'],
    ['MP3 with ID3', Buffer.from('ID3\x04\0\0'), 'audio/mpeg'],
    ['MP3 frame', Buffer.from([0xff, 0xfb, 0x90, 0x64, 0, 0]), 'audio/mpeg'],
    [
      'WebM',
      Buffer.concat([
        Buffer.from([0x1a, 0x45, 0xdf, 0xa3, 0x9f, 0x42, 0x86, 0x81, 0x01]),
        Buffer.from('\x42\x82\x84webm'),
      ]),
      'video/webm',
    ],
    ['M4A', Buffer.concat([Buffer.from([0, 0, 0, 0x20]), Buffer.from('ftypM4A \0\0\0\0')]), 'audio/mp4'],
    ['MP4', Buffer.concat([Buffer.from([0, 0, 0, 0x20]), Buffer.from('ftypisom\0\0\0\0')]), 'video/mp4'],
    ['UTF-8 text', Buffer.from('A generated caption — with “quotes” and an é.\n'), 'text/plain'],
  ])('recognises %s', (_name, bytes, mediaType) => {
    expect(sniffMediaType(bytes)?.mediaType).toBe(mediaType);
  });

  it.each([
    ['random bytes', Buffer.from([0x00, 0x13, 0x37, 0xfe, 0x01, 0x02, 0x03, 0x04])],
    ['empty', Buffer.alloc(0)],
    ['an ELF binary', Buffer.from('\x7fELF\x02\x01\x01\0')],
    ['a bad MPEG header (reserved version)', Buffer.from([0xff, 0xeb, 0x90, 0x64])],
  ])('refuses %s', (_name, bytes) => {
    expect(sniffMediaType(bytes)).toBeNull();
  });
});
