/**
 * Self-onboarding is for programmatic clients (agents, CLIs, SDKs). A request is browser-like when it carries
 * fetch-metadata that only browsers send (Sec-Fetch-Site / Sec-Fetch-Dest; Node's fetch sends Sec-Fetch-Mode
 * too, so that one proves nothing), an Origin header, or a browser's User-Agent (Mozilla/5.0 with an engine
 * token; headless browsers included).
 */
const BROWSER_UA = /Mozilla\/5\.0 .*(AppleWebKit|Gecko\/|Trident|Chrome\/|Safari\/|Firefox\/|Edg\/|OPR\/)/;

export interface ClientSignals {
  userAgent?: string;
  secFetchSite?: string;
  secFetchDest?: string;
  origin?: string;
}

export function isBrowserLike(signals: ClientSignals): boolean {
  if (signals.secFetchSite || signals.secFetchDest || signals.origin) return true;
  return BROWSER_UA.test(signals.userAgent ?? '');
}
