export { sniffMediaType, SNIFF_BYTES, type SniffedType, type Modality } from './sniff.js';
