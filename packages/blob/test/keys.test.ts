import { describe, expect, it } from '@jest/globals';
import { blobKeyOf, blobKeys, parseBlobKey, PUBLIC_OWNER } from '../src/index.js';

// Ids as @cairn/ids makes them (prefix + ULID); the module checks only that they are single safe segments.
const tenant = 't_01J9ZK3V6Q8N2R4T5W7X9Y0A1B';
const other = 't_01J9ZK3V6Q8N2R4T5W7X9Y0A1C';
const asset = 'a_01J9ZK3V6Q8N2R4T5W7X9Y0A1D';
let uploads = 0;
const newUpload = () => `up_01J9ZK3V6Q8N2R4T5W7X9Y0A${String(10 + uploads++)}`;

describe('blob keys', () => {
  it('parses back every key it builds', () => {
    const upload = newUpload();
    expect(parseBlobKey(blobKeys.upload(tenant, upload))).toEqual({
      kind: 'upload',
      key: `${tenant}/uploads/${upload}`,
      owner: tenant,
      uploadId: upload,
    });
    expect(parseBlobKey(blobKeys.upload(PUBLIC_OWNER, '01J9ZK3V6Q8N2R4T5W7X9Y0A1B'))).toMatchObject({
      kind: 'upload',
      owner: PUBLIC_OWNER,
    });
    expect(parseBlobKey(blobKeys.asset(tenant, asset, 'jpg'))).toEqual({
      kind: 'asset',
      key: `${tenant}/assets/${asset}.jpg`,
      tenantId: tenant,
      assetId: asset,
      extension: 'jpg',
    });
    expect(parseBlobKey(blobKeys.thumbnail(tenant, asset))).toEqual({
      kind: 'thumbnail',
      key: `${tenant}/thumbnails/${asset}.jpg`,
      tenantId: tenant,
      assetId: asset,
    });
    const manifest = 'm_01J9ZK3V6Q8N2R4T5W7X9Y0A1E';
    expect(parseBlobKey(blobKeys.manifest(manifest))).toEqual({
      kind: 'manifest',
      key: `manifests/${manifest}.c2pa`,
      manifestId: manifest,
    });
  });

  it('refuses keys that escape their prefix: traversal, absolute, empty segments, unknown rooms', () => {
    for (const key of [
      `${tenant}/uploads/../../${other}/assets/${asset}.jpg`,
      `${tenant}/../${other}/assets/${asset}.jpg`,
      `../${tenant}/uploads/x`,
      `${tenant}/uploads/..`,
      `${tenant}/uploads/.`,
      `/${tenant}/uploads/x`,
      `/etc/passwd`,
      `${tenant}//uploads/x`,
      `${tenant}/uploads/x/`,
      `${tenant}/uploads/`,
      `${tenant}/uploads`,
      `${tenant}/secrets/x`,
      `${tenant}/assets/${asset}`,
      `${tenant}/assets/${asset}.jpg.exe/x`,
      `${tenant}/thumbnails/${asset}.png`,
      `${tenant}\\uploads\\x`,
      `${tenant}/uploads/x%2F..`,
      `manifests/../x.c2pa`,
      `manifests/x.json`,
      `${PUBLIC_OWNER}/assets/${asset}.jpg`,
      '',
      'x'.repeat(600),
    ]) {
      expect([key, parseBlobKey(key)]).toEqual([key, undefined]);
    }
  });

  it('accepts a key only as the kind and owner it is used for', () => {
    const upload = blobKeys.upload(tenant, newUpload());
    expect(blobKeyOf(upload, 'upload', tenant)).toMatchObject({ owner: tenant });
    expect(blobKeyOf(upload, 'upload', other)).toBeUndefined();
    expect(blobKeyOf(upload, 'upload', PUBLIC_OWNER)).toBeUndefined();
    expect(blobKeyOf(upload, 'asset', tenant)).toBeUndefined();
    const signed = blobKeys.asset(tenant, asset, 'png');
    expect(blobKeyOf(signed, 'asset', tenant)).toMatchObject({ assetId: asset, extension: 'png' });
    expect(blobKeyOf(signed, 'asset', other)).toBeUndefined();
    expect(blobKeyOf(signed, 'upload', tenant)).toBeUndefined();
    expect(blobKeyOf(`${other}/assets/${asset}.png`, 'asset', tenant)).toBeUndefined();
    expect(blobKeyOf(`${tenant}/assets/../../${other}/assets/${asset}.png`, 'asset', tenant)).toBeUndefined();
  });

  it('never builds a key from parts that would escape', () => {
    expect(() => blobKeys.upload('..', 'x')).toThrow(RangeError);
    expect(() => blobKeys.upload(tenant, '../x')).toThrow(RangeError);
    expect(() => blobKeys.upload(`${tenant}/assets`, 'x')).toThrow(RangeError);
    expect(() => blobKeys.asset(tenant, asset, 'jpg/../x')).toThrow(RangeError);
    expect(() => blobKeys.asset('', asset, 'jpg')).toThrow(RangeError);
    expect(() => blobKeys.thumbnail(tenant, `${asset}/..`)).toThrow(RangeError);
    expect(() => blobKeys.manifest('../m')).toThrow(RangeError);
  });
});
