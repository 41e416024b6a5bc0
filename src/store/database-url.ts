// database_url: what Berth accepts, and the form it may print (never the password).

/** Why `url` is not a PostgreSQL URL Berth can use, or null. Never quotes the URL (it may hold a password). */
export function databaseUrlProblem(url: string): string | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'must be a URL of the form postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE';
  }
  if (u.protocol !== 'postgres:' && u.protocol !== 'postgresql:') {
    return `must start with postgres:// or postgresql:// (found ${u.protocol}//)`;
  }
  if (u.hostname === '') return 'names no host (postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE)';
  if (u.pathname.length <= 1) return 'names no database (postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE)';
  if (u.username === '') return 'names no user (postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE)';
  return null;
}

/** The URL with its password (in the user info or a `password` parameter) replaced by "***". */
export function redactDatabaseUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return '(unparsable database URL)';
  }
  if (u.password !== '') u.password = '***';
  if (u.searchParams.has('password')) u.searchParams.set('password', '***');
  return u.toString().replace('%2A%2A%2A', '***');
}

/** The password the URL carries, if any (so messages can be scrubbed of it). */
export function databaseUrlPassword(url: string): string | undefined {
  try {
    const u = new URL(url);
    const password = u.password !== '' ? decodeURIComponent(u.password) : u.searchParams.get('password');
    return password === null || password === '' ? undefined : password;
  } catch {
    return undefined;
  }
}
