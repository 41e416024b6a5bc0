// The console's entry: the token field, the auth banner, and the three views behind #fleet, #decisions, #whatif.
import { onAuthProblem, setToken, token } from './api.ts';
import { byId } from './dom.ts';
import { initDecisions, showDecisions } from './decisions.ts';
import { initFleet, showFleet, type Dialect } from './fleet.ts';
import { initWhatIf } from './whatif.ts';

const VIEWS = ['fleet', 'decisions', 'whatif'] as const;
const DIALECTS: readonly string[] = ['volumes', 'placement', 'replicas'];

function route(): void {
  const [view = 'fleet', arg] = location.hash.replace(/^#/, '').split('/');
  const current = (VIEWS as readonly string[]).includes(view) ? view : 'fleet';
  for (const v of VIEWS) byId(`view-${v}`).hidden = v !== current;
  for (const a of document.querySelectorAll<HTMLAnchorElement>('#tabs a')) {
    if (a.dataset.view === current) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  if (current === 'fleet') showFleet(arg && DIALECTS.includes(arg) ? (arg as Dialect) : undefined);
  else if (current === 'decisions') showDecisions(arg && /^\d+$/.test(arg) ? Number(arg) : undefined);
}

function initToken(): void {
  const input = byId<HTMLInputElement>('token');
  input.value = token();
  byId('token-form').addEventListener('submit', (e) => {
    e.preventDefault();
    setToken(input.value.trim());
    route();
  });
  byId('token-clear').addEventListener('click', () => {
    input.value = '';
    setToken('');
    route();
  });
  const banner = byId('auth-banner');
  onAuthProblem((status, message) => {
    banner.hidden = status === null;
    banner.textContent = message;
    banner.dataset.status = status === null ? '' : String(status);
  });
}

initToken();
initFleet();
initDecisions();
initWhatIf();
window.addEventListener('hashchange', route);
route();
