// The verify use case (the three inputs: an upload, an asset id, a Cairn manifest URL). verify.ts reads as its steps
// (gather, identify, decide, explain, record): subject.ts resolves the input to bytes, watermark.ts and signals.ts
// gather the signals, records.ts finds the Cairn record the file belongs to; its ports are in ../ports.ts.
export { verify } from './verify.js';
export { ownManifestId } from './subject.js';
export type { VerifyDeps, VerifyOutcome } from './deps.js';
