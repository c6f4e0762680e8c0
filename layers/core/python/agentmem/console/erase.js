// Erase this user (GDPR): a confirmation, DELETE {scope}, the erasure's progress and its receipt.

import { clear, field, h, when } from './dom.js';

const POLL_MS = 400;
const GIVE_UP_MS = 10 * 60 * 1000;
const COUNTS = [
  ['entries', 'memory entries'],
  ['vectors', 'vectors (embeddings)'],
  ['graph_items', 'graph items (entities, facts, relations)'],
  ['episodes', 'episodes'],
];

export async function render(ctx, root) {
  const { api, scope, user } = ctx;
  const confirm = h('input', { type: 'text', id: 'erase-confirm', autocomplete: 'off', placeholder: user });
  const start = h('button', { type: 'button', id: 'erase-start', class: 'danger', text: 'Erase this user', disabled: true });
  const progress = h('p', { id: 'erase-status', class: 'caption' });
  const receipt = h('section', { id: 'erase-receipt', class: 'panel', hidden: true });

  function showReceipt(status) {
    clear(receipt).append(
      h('h3', { text: `Receipt: ${status.status}` }),
      h(
        'table',
        { id: 'receipt-table' },
        h(
          'tbody',
          {},
          h('tr', {}, h('th', { text: 'deletion id' }), h('td', { text: status.deletion_id })),
          h('tr', {}, h('th', { text: 'status' }), h('td', { class: 'receipt-status', text: status.status })),
          h('tr', {}, h('th', { text: 'started at' }), h('td', { text: when(status.started_at) })),
          h('tr', {}, h('th', { text: 'finished at' }), h('td', { text: when(status.finished_at) || 'still running' })),
          COUNTS.map(([name, label]) =>
            h('tr', { dataset: { count: name } }, h('th', { text: `${label} deleted` }), h('td', { class: 'number', text: String(status.deleted[name]) })),
          ),
          status.error ? h('tr', {}, h('th', { text: 'error' }), h('td', { text: `${status.error.code}: ${status.error.message}` })) : null,
        ),
      ),
    );
    receipt.hidden = false;
    receipt.dataset.status = status.status;
  }

  async function follow(deletionId) {
    const began = Date.now();
    for (;;) {
      let status;
      try {
        status = await api.get(`${scope}/deletions/${encodeURIComponent(deletionId)}`);
      } catch (error) {
        ctx.notify(ctx.describe(error));
        return;
      }
      showReceipt(status);
      if (status.status !== 'RUNNING') {
        progress.textContent = status.status === 'SUCCEEDED'
          ? `Erased: nothing of user ${user} is left in any store.`
          : `The erasure failed; it can be started again.`;
        return;
      }
      progress.textContent = `Erasing ${user}… (${Math.round((Date.now() - began) / 1000)} s)`;
      if (Date.now() - began > GIVE_UP_MS) {
        progress.textContent = 'Still running; this page stopped following it. Reopen this link to check again.';
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }

  confirm.addEventListener('input', () => {
    start.disabled = confirm.value !== user;
  });
  start.addEventListener('click', async () => {
    if (confirm.value !== user) return;
    start.disabled = true;
    confirm.disabled = true;
    try {
      const started = await api.delete(scope);
      ctx.setParam('deletion', started.deletion_id);
      await follow(started.deletion_id);
    } catch (error) {
      ctx.notify(ctx.describe(error));
    } finally {
      confirm.disabled = false;
      confirm.value = '';
    }
  });

  root.replaceChildren(
    h('h2', { text: `Erase user ${user}` }),
    h(
      'p',
      { text: `This erases everything held for user ${user} of app ${ctx.app}, in every project and every store: memory entries and their vectors, the knowledge graph with its history, episodes and the user's records. It cannot be undone. Writes for the user are refused while it runs; the receipt below counts what was deleted per store.` },
    ),
    h('div', { class: 'toolbar' }, field(`Type the user id (${user}) to confirm`, confirm), start),
    progress,
    receipt,
  );
  const earlier = ctx.params.get('deletion');
  if (earlier) await follow(earlier);
}
