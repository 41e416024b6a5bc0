// Every call to Berth: relative to the console's own location (so a path prefix in front of Berth keeps working),
// with the token from sessionStorage as a Bearer credential. 401/403 are shown in the banner.

const TOKEN_KEY = 'berth.token';
const base = new URL('..', document.baseURI);

export function token(): string {
  return sessionStorage.getItem(TOKEN_KEY) ?? '';
}

export function setToken(value: string): void {
  if (value === '') sessionStorage.removeItem(TOKEN_KEY);
  else sessionStorage.setItem(TOKEN_KEY, value);
}

export interface Answer {
  status: number;
  ok: boolean;
  body: unknown;
}

type AuthListener = (status: number | null, message: string) => void;
let onAuth: AuthListener = () => undefined;

export function onAuthProblem(listener: AuthListener): void {
  onAuth = listener;
}

/** The sentence an error body carries: problem+json `detail`, or Placement's `errors[0].detail`. */
export function errorText(body: unknown, status: number): string {
  const b = body as { title?: string; detail?: string; errors?: Array<{ title?: string; detail?: string }> } | null;
  const detail = b?.detail ?? b?.errors?.[0]?.detail ?? (typeof body === 'string' ? body : '');
  const title = b?.title ?? b?.errors?.[0]?.title ?? '';
  return [`${status}${title ? ` ${title}` : ''}`, detail].filter(Boolean).join(': ');
}

export async function call(path: string, init: RequestInit = {}): Promise<Answer> {
  const headers = new Headers(init.headers);
  const t = token();
  if (t !== '') headers.set('authorization', `Bearer ${t}`);
  if (init.body !== undefined && !headers.has('content-type')) headers.set('content-type', 'application/json');
  const res = await fetch(new URL(path, base), { ...init, headers });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text === '' ? null : JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  if (res.status === 401) {
    onAuth(401, `${errorText(body, 401)} — Berth wants a token: paste one into the Token field.`);
  } else if (res.status === 403) {
    onAuth(403, `${errorText(body, 403)} — this token's role may not do that.`);
  } else {
    onAuth(null, '');
  }
  return { status: res.status, ok: res.ok, body };
}
