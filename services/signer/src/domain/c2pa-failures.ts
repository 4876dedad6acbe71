// How a C2PA signature fails, as the signing adapter reports it and the sign use case tells the cases apart.

/** The sign input is not what a manifest can be built from (metadata, claim generator, soft binding). */
export class C2paInputError extends Error {
  override readonly name = 'C2paInputError';
}

/** c2pa-rs could not sign the file: a container it cannot read, or its own failure (answered per media type). */
export class C2paSignError extends Error {
  override readonly name = 'C2paSignError';
}
