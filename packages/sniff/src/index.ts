// Media type by magic bytes, with no dependency: the gateway sniffs uploads at the edge (415 before any work)
// without linking a decoder. Decoding lives in @cairn/media, which re-exports this.
export { sniffMediaType, SNIFF_BYTES, type SniffedType, type Modality } from './sniff.js';
