import { createHash, createPrivateKey, createPublicKey, sign as nodeSign, type KeyObject } from 'node:crypto';
import { inspect } from 'node:util';
import graphene from 'graphene-pk11';
import type { Module, PrivateKey, Session, Slot } from 'graphene-pk11';
import { CairnError } from '@cairn/errors';
import type { KeyBackend } from '../app/ports.js';
import type { Pkcs11Config } from '../config.js';

const UNAVAILABLE_DETAIL = 'The signing key is temporarily unavailable; retry later.';

function unavailable(stage: string, error: unknown): CairnError {
  if (error instanceof CairnError) return error;
  // The detail reaches API clients; what went wrong (and where) stays in the cause, which only logs see.
  const message = error instanceof Error ? error.message : String(error);
  return new CairnError(
    'cairn.signer.unavailable',
    UNAVAILABLE_DETAIL,
    {},
    { cause: new Error(`${stage}: ${message}`, { cause: error }) },
  );
}

// ---------------------------------------------------------------------------------------------------------
// Software keys

export class SoftwareKeyBackend implements KeyBackend {
  readonly kind = 'software' as const;
  readonly #key: KeyObject;

  private constructor(key: KeyObject) {
    this.#key = key;
  }

  /** From an unsealed PKCS#8 DER; the caller zeroes its buffer afterwards (node keeps its own copy). */
  static fromPkcs8(der: Buffer): SoftwareKeyBackend {
    const key = createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
    if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
      throw new Error('signing keys must be ECDSA P-256');
    }
    return new SoftwareKeyBackend(key);
  }

  async sign(tbs: Buffer): Promise<Buffer> {
    try {
      return nodeSign('sha256', tbs, { key: this.#key, dsaEncoding: 'ieee-p1363' });
    } catch (error) {
      throw unavailable('software sign', error);
    }
  }

  publicKeySpki(): Buffer {
    return createPublicKey(this.#key).export({ format: 'der', type: 'spki' });
  }

  toJSON(): { kind: 'software' } {
    return { kind: this.kind };
  }

  [inspect.custom](): string {
    return 'SoftwareKeyBackend { kind: "software" }';
  }
}

// ---------------------------------------------------------------------------------------------------------
// PKCS#11 keys (SoftHSM2 in development, a network HSM in production)

const CKR_USER_ALREADY_LOGGED_IN = 0x100;

// C_Initialize is process-wide per library: one Module per path, kept for the life of the process.
const modules = new Map<string, Module>();

function loadModule(path: string): Module {
  const existing = modules.get(path);
  if (existing) return existing;
  const module = graphene.Module.load(path, 'cairn-signer');
  try {
    module.initialize();
  } catch (error) {
    module.close();
    throw error;
  }
  modules.set(path, module);
  return module;
}

function findSlot(module: Module, tokenLabel: string): Slot {
  const slots = module.getSlots(true);
  for (let i = 0; i < slots.length; i++) {
    const slot = slots.items(i);
    try {
      if (slot.getToken().label.trim() === tokenLabel) return slot;
    } catch {
      // A token being removed answers C_GetTokenInfo with an error; it is not the one we want anyway.
    }
  }
  throw new Error('token not found');
}

/**
 * One logged-in session per (module, token, PIN). Operations on it are synchronous: a PKCS#11 session runs
 * one operation at a time (SignInit+Sign), and Node's single thread serialises them for free. SoftHSM signs
 * in well under a millisecond; a network HSM would want a session pool instead.
 */
class TokenSession {
  #session: Session | undefined;
  readonly #config: Pkcs11Config;

  constructor(config: Pkcs11Config) {
    this.#config = config;
  }

  /** Runs `fn` on the session; any failure drops the session so the next call starts from a fresh login. */
  use<T>(fn: (session: Session) => T): T {
    const session = this.#session ?? this.#open();
    try {
      return fn(session);
    } catch (error) {
      this.reset();
      throw error;
    }
  }

  get current(): Session | undefined {
    return this.#session;
  }

  reset(): void {
    const session = this.#session;
    this.#session = undefined;
    try {
      session?.close();
    } catch {
      // Already gone with its token.
    }
  }

  #open(): Session {
    let module: Module;
    try {
      module = loadModule(this.#config.modulePath);
    } catch (error) {
      throw unavailable('pkcs11 module load', error);
    }
    let slot: Slot;
    try {
      slot = findSlot(module, this.#config.tokenLabel);
    } catch (error) {
      throw unavailable('pkcs11 token lookup', error);
    }
    let session: Session;
    try {
      session = slot.open(graphene.SessionFlag.SERIAL_SESSION | graphene.SessionFlag.RW_SESSION);
    } catch (error) {
      throw unavailable('pkcs11 open session', error);
    }
    try {
      session.login(this.#config.pin, graphene.UserType.USER);
    } catch (error) {
      // Login state is per token for the whole process: another session of ours may have logged in already.
      if ((error as { code?: number }).code !== CKR_USER_ALREADY_LOGGED_IN) {
        try {
          session.close();
        } catch {
          // ignore
        }
        throw unavailable('pkcs11 login', error);
      }
    }
    this.#session = session;
    return session;
  }
}

const tokenSessions = new Map<string, TokenSession>();

function tokenSession(config: Pkcs11Config): TokenSession {
  const key = [config.modulePath, config.tokenLabel, createHash('sha256').update(config.pin).digest('hex')].join('\0');
  let session = tokenSessions.get(key);
  if (!session) {
    session = new TokenSession(config);
    tokenSessions.set(key, session);
  }
  return session;
}

function findPrivateKey(session: Session, label: string): PrivateKey {
  const found = session.find({ class: graphene.ObjectClass.PRIVATE_KEY, label });
  if (found.length !== 1)
    throw new Error(found.length === 0 ? 'key not found on token' : 'key label is ambiguous on token');
  return found.items(0).toType<PrivateKey>();
}

/** DER SubjectPublicKeyInfo prefix of a P-256 public key (id-ecPublicKey, prime256v1, BIT STRING of 66 bytes). */
const P256_SPKI_PREFIX = Buffer.from('3059301306072a8648ce3d020106082a8648ce3d030107034200', 'hex');

/** CKA_EC_POINT is a DER OCTET STRING around the uncompressed point (some tokens omit the wrapper). */
function spkiFromEcPoint(point: Buffer): Buffer {
  let raw = point;
  if (point.length === 67 && point[0] === 0x04 && point[1] === 0x41) raw = point.subarray(2);
  if (raw.length !== 65 || raw[0] !== 0x04) throw new Error('unexpected CKA_EC_POINT encoding');
  return Buffer.concat([P256_SPKI_PREFIX, raw]);
}

export class Pkcs11KeyBackend implements KeyBackend {
  readonly kind = 'pkcs11' as const;
  readonly #token: TokenSession;
  readonly #label: string;
  #cached: { session: Session; key: PrivateKey } | undefined;

  constructor(config: Pkcs11Config, keyLabel: string) {
    this.#token = tokenSession(config);
    this.#label = keyLabel;
  }

  get keyLabel(): string {
    return this.#label;
  }

  async sign(tbs: Buffer): Promise<Buffer> {
    // SoftHSM has no CKM_ECDSA_SHA256; hashing here and signing the digest with CKM_ECDSA is equivalent.
    const digest = createHash('sha256').update(tbs).digest();
    try {
      return this.#token.use((session) => {
        const key = this.#cached?.session === session ? this.#cached.key : findPrivateKey(session, this.#label);
        this.#cached = { session, key };
        const signature = session.createSign('ECDSA', key).once(digest);
        if (signature.length !== 64) throw new Error(`token returned a ${signature.length}-byte ECDSA signature`);
        return signature;
      });
    } catch (error) {
      this.#cached = undefined;
      throw unavailable('pkcs11 sign', error);
    }
  }

  toJSON(): { kind: 'pkcs11'; keyLabel: string } {
    return { kind: this.kind, keyLabel: this.#label };
  }

  [inspect.custom](): string {
    return `Pkcs11KeyBackend { kind: "pkcs11", keyLabel: ${JSON.stringify(this.#label)} }`;
  }
}

/**
 * Generates an ECDSA P-256 key pair ON the token: the private key is sensitive and non-extractable and never
 * leaves it. Returns the public key as SPKI DER, for the intermediate to certify.
 */
export async function generatePkcs11SigningKey(config: Pkcs11Config, label: string, id: Buffer): Promise<Buffer> {
  try {
    return tokenSession(config).use((session) => {
      if (session.find({ class: graphene.ObjectClass.PRIVATE_KEY, label }).length > 0)
        throw new Error('a key with this label already exists');
      const ec = { keyType: graphene.KeyType.ECDSA, token: true, label, id };
      const pair = session.generateKeyPair(
        graphene.KeyGenMechanism.EC,
        { ...ec, paramsEC: graphene.NamedCurve.getByName('secp256r1').value, verify: true, private: false },
        { ...ec, sign: true, private: true, sensitive: true, extractable: false },
      );
      const point = pair.publicKey.getAttribute({ pointEC: null }).pointEC;
      if (!Buffer.isBuffer(point)) throw new Error('token did not return CKA_EC_POINT');
      return spkiFromEcPoint(point);
    });
  } catch (error) {
    throw unavailable('pkcs11 generate key', error);
  }
}

/** Removes a key pair from the token (a generated key that ended up unused). Best effort: returns false on failure. */
export async function destroyPkcs11Key(config: Pkcs11Config, label: string): Promise<boolean> {
  try {
    return tokenSession(config).use((session) => {
      const n =
        session.destroy({ class: graphene.ObjectClass.PRIVATE_KEY, label }) +
        session.destroy({ class: graphene.ObjectClass.PUBLIC_KEY, label });
      return n > 0;
    });
  } catch {
    return false;
  }
}

/** Closes every session and finalizes every module (shutdown; tests). */
export function closePkcs11(): void {
  for (const session of tokenSessions.values()) session.reset();
  tokenSessions.clear();
  for (const module of modules.values()) {
    try {
      module.finalize();
      module.close();
    } catch {
      // ignore
    }
  }
  modules.clear();
}
