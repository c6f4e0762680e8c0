// The app's users (GET /v1/apps/{app}/users), page by page: pick one to open its views.

import { h, when } from './dom.js';

const PAGE = 50;

/** Render the app's users into `root`; the first page is already read (`first`: it checked the key). */
export function render({ api, app, view, linkTo, notify, describe }, root, first) {
  const rows = h('tbody', { id: 'users-body' });
  const caption = h('p', { id: 'users-caption', class: 'caption' });
  const more = h('button', { type: 'button', id: 'users-more', text: 'Load more', hidden: true });
  let cursor = null;
  let shown = 0;

  function show(page) {
    for (const user of page.users) {
      rows.append(
        h(
          'tr',
          { dataset: { user: user.user_id } },
          h('td', {}, h('a', { href: linkTo({ app, user: user.user_id, view }), text: user.user_id })),
          h('td', { class: 'number', text: String(user.entries) }),
          h('td', { class: 'nowrap', text: user.last_write_at ? when(user.last_write_at) : '—' }),
        ),
      );
    }
    shown += page.users.length;
    cursor = page.next_cursor;
    more.hidden = !cursor;
    caption.textContent = shown
      ? `${shown} user${shown === 1 ? '' : 's'}${cursor ? ' so far' : ''}, in id order`
      : `App “${app}” has no users yet: a user appears with their first write.`;
  }

  more.addEventListener('click', async () => {
    more.disabled = true;
    try {
      show(await api.get(`v1/apps/${encodeURIComponent(app)}/users`, { limit: PAGE, cursor }));
    } catch (error) {
      notify(describe(error));
    } finally {
      more.disabled = false;
    }
  });

  root.replaceChildren(
    h('h2', { text: `Users of ${app}` }),
    h('p', {
      text:
        'Every user the app holds data for, with the memory entries they hold (in every project) and their last '
        + 'memory write. A user being erased is not listed. Pick one to see what is remembered.',
    }),
    caption,
    h(
      'table',
      { id: 'users' },
      h('thead', {}, h('tr', {}, h('th', { text: 'User' }), h('th', { text: 'Entries' }), h('th', { text: 'Last write' }))),
      rows,
    ),
    more,
  );
  show(first);
}

/** The first page (it also checks the key: 401 and 403 raise). */
export function firstPage(api, app) {
  return api.get(`v1/apps/${encodeURIComponent(app)}/users`, { limit: PAGE });
}
