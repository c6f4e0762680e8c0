// Correcting a memory in place (PATCH {scope}/memories/{id}) and reading its versions (GET .../history),
// from a row of the memories view: an editor row and a history row under the entry's own.

import { h, when } from './dom.js';

/** The text of an entry's text parts, and how many other parts it has. */
export function entryText(entry) {
  const parts = (entry.content && entry.content.parts) || [];
  const texts = parts.filter((p) => typeof p.text === 'string').map((p) => p.text);
  const others = parts.length - texts.length;
  return texts.join('\n') + (others ? ` [+${others} non-text part${others > 1 ? 's' : ''}]` : '');
}

function plainText(entry) {
  return ((entry.content && entry.content.parts) || []).filter((p) => typeof p.text === 'string').map((p) => p.text).join('\n');
}

function parseMetadata(text) {
  if (!text.trim()) return null;
  let value;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new Error(`The metadata is not valid JSON: ${error.message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Error('The metadata must be a JSON object, e.g. {"topic": "food"}');
  }
  return value;
}

/** Remove the editor and history rows under the entry's row ``tr``. */
export function dropBelow(tr) {
  while (tr.nextElementSibling && !tr.nextElementSibling.dataset.id) tr.nextElementSibling.remove();
}

/** Below ``tr``, a row of ``columns`` cells holding ``content`` (one open at a time per kind). */
function openBelow(tr, kind, columns, content) {
  const next = tr.nextElementSibling;
  if (next && next.classList.contains(kind)) {
    next.remove();
    return null;
  }
  const row = h('tr', { class: kind }, h('td', { colspan: String(columns) }, content));
  tr.after(row);
  return row;
}

/**
 * The Edit and History buttons of the entry's row ``tr``: ``saved(entry)`` gets the entry as stored after a
 * correction (the caller draws its row again).
 */
export function revisionButtons(ctx, scope, entry, tr, columns, saved) {
  const path = `${scope}/memories/${encodeURIComponent(entry.id)}`;
  const query = { project_id: entry.project_id };

  function edit() {
    const text = h('textarea', { class: 'edit-text', rows: '3', 'aria-label': 'Text' });
    text.value = plainText(entry);
    const metadata = h('textarea', { class: 'edit-metadata', rows: '2', 'aria-label': 'Metadata (JSON)' });
    metadata.value = entry.metadata && Object.keys(entry.metadata).length ? JSON.stringify(entry.metadata) : '';
    const save = h('button', { type: 'button', class: 'save-edit', text: `Save as revision ${(entry.revision || 1) + 1}` });
    const form = h(
      'div',
      { class: 'toolbar' },
      h('label', { class: 'field' }, h('span', { text: 'Text' }), text),
      h('label', { class: 'field' }, h('span', { text: 'Metadata (JSON)' }), metadata),
      save,
      h('button', { type: 'button', class: 'cancel-edit', text: 'Cancel', onclick: () => row && row.remove() }),
    );
    const row = openBelow(tr, 'editor', columns, form);
    save.addEventListener('click', async () => {
      const body = { revision: entry.revision || 1, project_id: entry.project_id };
      try {
        const newMetadata = parseMetadata(metadata.value);
        if (text.value !== plainText(entry)) {
          const others = ((entry.content && entry.content.parts) || []).filter((p) => typeof p.text !== 'string');
          body.content = { role: (entry.content && entry.content.role) || 'user', parts: [{ text: text.value }, ...others] };
        }
        if (JSON.stringify(newMetadata || {}) !== JSON.stringify(entry.metadata || {})) body.metadata = newMetadata;
      } catch (error) {
        ctx.notify(error.message);
        return;
      }
      if (!('content' in body) && !('metadata' in body)) {
        ctx.notify('Nothing changed: edit the text or the metadata first.');
        return;
      }
      save.disabled = true;
      try {
        const stored = await ctx.api.request('PATCH', path, { body });
        dropBelow(tr);
        saved(stored);
        ctx.notify(`Saved the entry ${stored.id} as revision ${stored.revision}.`, 'info');
      } catch (error) {
        ctx.notify(error.code === 'revision_conflict'
          ? `The entry was changed meanwhile (${error.message}); reload to see it, then edit again. (409 revision_conflict)`
          : ctx.describe(error));
      } finally {
        save.disabled = false;
      }
    });
  }

  async function history() {
    try {
      const answer = await ctx.api.get(`${path}/history`, query);
      const rows = answer.versions.slice().reverse().map((v) => h(
        'tr',
        { dataset: { revision: String(v.revision) } },
        h('td', { text: String(v.revision) }),
        h('td', { class: 'text', text: entryText(v) }),
        h('td', {}, Object.keys(v.metadata || {}).length ? h('code', { class: 'metadata', text: JSON.stringify(v.metadata) }) : ''),
        h('td', { class: 'nowrap', text: when(v.valid_from) }),
        h('td', { class: 'nowrap', text: v.valid_to ? when(v.valid_to) : 'current' }),
      ));
      openBelow(tr, 'history', columns, h(
        'table',
        { class: 'versions' },
        h('thead', {}, h('tr', {}, ['Revision', 'Text', 'Metadata', 'From', 'Until'].map((t) => h('th', { text: t })))),
        h('tbody', {}, rows),
      ));
    } catch (error) {
      ctx.notify(ctx.describe(error));
    }
  }

  return [
    h('button', { type: 'button', class: 'edit', text: 'Edit', onclick: edit }),
    h('button', { type: 'button', class: 'show-history', text: 'History', onclick: history }),
  ];
}
