// The token of the panel's pages. It comes in the page's address, as
// #token=… (a fragment: sent to no server, in no Referer) or ?token=…,
// and is kept for the tab (sessionStorage) and taken out of the address at
// once: it is then in no history entry, no bookmark, no link copied from
// the address bar, no screenshot of it.
const key = 'moora.devpanel.token';

export function pageToken(): string {
  const query = new URLSearchParams(location.search);
  const fragment = new URLSearchParams(location.hash.slice(1));
  const given = fragment.get('token') || query.get('token');
  if (given) {
    sessionStorage.setItem(key, given);
    query.delete('token');
    fragment.delete('token');
    const q = query.toString();
    const f = fragment.toString();
    history.replaceState(history.state, '', location.pathname + (q ? '?' + q : '') + (f ? '#' + f : ''));
    return given;
  }
  return sessionStorage.getItem(key) || '';
}
