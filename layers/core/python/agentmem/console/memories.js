// Memories: newest first with paging, search in three modes with scores, filters, edit one (and its history,
// revisions.js), delete one, delete by filter.

import { clear, confirmButton, field, h, projectSelect, when } from './dom.js';
import { dropBelow, entryText, revisionButtons } from './revisions.js';

const PAGE = 20;

function parseFilter(text) {
  if (!text.trim()) return null;
  let value;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new Error(`The filter is not valid JSON: ${error.message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Error('The filter must be a JSON object, e.g. {"topic": "food"}');
  }
  return value;
}

export async function render(ctx, root) {
  const { api, scope } = ctx;
  let project = ctx.params.get('project') || null;
  let listing = null; // {kind: 'recent'|'query', cursor, filter}

  const capabilities = await api.get('v1/capabilities').catch(() => ({ search_modes: ['keyword'] }));
  const modes = capabilities.search_modes || ['keyword'];
  const threshold = capabilities.relevance_threshold;

  const query = h('input', { type: 'search', name: 'q', id: 'search-query', placeholder: 'words to search for' });
  const mode = h(
    'select',
    { name: 'mode', id: 'search-mode' },
    modes.map((m) => h('option', { value: m, text: m })),
  );
  mode.value = capabilities.default_search_mode || modes[0];
  const topK = h('input', { type: 'number', name: 'top_k', id: 'search-top-k', min: '1', max: '100', value: '10' });
  const minScore = h('input', {
    type: 'number', name: 'min_score', id: 'search-min-score', min: '0', max: '1', step: '0.01',
    placeholder: threshold !== undefined ? `e.g. ${threshold}` : '0..1',
  });
  const filter = h('textarea', {
    name: 'filter', id: 'search-filter', rows: '2', placeholder: '{"topic": "food"} or {"rating": {"$gte": 4}}',
  });
  const rows = h('tbody', { id: 'entries-body' });
  const caption = h('p', { id: 'entries-caption', class: 'caption' });
  const more = h('button', { type: 'button', id: 'load-more', text: 'Load more', hidden: true });
  const scoreHead = h('th', { text: 'Score', hidden: true });

  function row(entry, scored) {
    const tr = h('tr', { dataset: { id: entry.id } });
    const metadata = entry.metadata && Object.keys(entry.metadata).length ? JSON.stringify(entry.metadata) : '';
    tr.append(
      h('td', { class: 'score', hidden: !scored, text: scored ? Number(entry.score).toFixed(3) : '' }),
      h('td', { class: 'text', text: entryText(entry) }),
      h('td', { class: 'nowrap', text: when(entry.timestamp) }),
      h('td', { text: entry.author || '' }),
      h('td', { text: entry.session_id || '' }),
      h('td', { text: entry.project_id || '(global)' }),
      h('td', {}, metadata ? h('code', { class: 'metadata', text: metadata }) : ''),
      h('td', { class: 'nowrap expires', text: entry.expires_at ? when(entry.expires_at) : 'never' }),
      h(
        'td',
        { class: 'actions' },
        revisionButtons(ctx, scope, entry, tr, 9, (stored) => tr.replaceWith(row({ ...stored, score: entry.score }, scored))),
        confirmButton('Delete', 'Confirm delete', async () => {
          try {
            await api.delete(`${scope}/memories/${encodeURIComponent(entry.id)}`);
            dropBelow(tr);
            tr.remove();
            ctx.notify(`Deleted the entry ${entry.id}.`, 'info');
          } catch (error) {
            ctx.notify(ctx.describe(error));
          }
        }),
      ),
    );
    return tr;
  }

  function show(entries, { scored, append: keep }) {
    if (!keep) clear(rows);
    scoreHead.hidden = !scored;
    rows.append(...entries.map((e) => row(e, scored)));
    if (!rows.children.length) rows.append(h('tr', {}, h('td', { colspan: '9', class: 'empty', text: 'No entries.' })));
  }

  async function page(first) {
    const body = { project_id: project, limit: PAGE, cursor: first ? undefined : listing.cursor };
    const answer = listing.kind === 'query'
      ? await api.post(`${scope}/memories/query`, { ...body, filter: listing.filter })
      : await api.get(`${scope}/memories`, body);
    listing.cursor = answer.next_cursor;
    show(answer.entries, { scored: false, append: !first });
    more.hidden = !answer.next_cursor;
    const shown = rows.querySelectorAll('tr[data-id]').length;
    caption.textContent = listing.kind === 'query'
      ? `${shown} entries matching the filter, newest first${answer.next_cursor ? ' (more below)' : ''}.`
      : `${shown} newest entries${answer.next_cursor ? ' (more below)' : ''}.`;
  }

  async function list(filterValue) {
    listing = filterValue ? { kind: 'query', filter: filterValue } : { kind: 'recent' };
    await page(true);
  }

  async function search() {
    let filterValue;
    try {
      filterValue = parseFilter(filter.value);
    } catch (error) {
      ctx.notify(error.message);
      return;
    }
    ctx.notify('');
    try {
      if (!query.value.trim()) {
        await list(filterValue);
        return;
      }
      const body = { query: query.value, mode: mode.value, top_k: Number(topK.value) || 10, project_id: project };
      if (minScore.value !== '') body.min_score = Number(minScore.value);
      if (filterValue) body.filter = filterValue;
      const answer = await api.post(`${scope}/memories/search`, body);
      more.hidden = true;
      show(answer.entries, { scored: true, append: false });
      const notes = [answer.degraded ? `degraded: ${(answer.warnings || []).join('; ')}` : '', answer.truncated ? 'truncated' : '']
        .filter(Boolean)
        .join(', ');
      caption.textContent = `${answer.entries.length} hit${answer.entries.length === 1 ? '' : 's'}, ${answer.mode} search, best first${notes ? ` (${notes})` : ''}.`;
    } catch (error) {
      ctx.notify(ctx.describe(error));
    }
  }

  more.addEventListener('click', () => page(false).catch((error) => ctx.notify(ctx.describe(error))));
  const searchForm = h(
    'form',
    { id: 'search-form', class: 'toolbar', onsubmit: (event) => { event.preventDefault(); search(); } },
    field('Search', query),
    field('Mode', mode),
    field('top_k', topK),
    field('min_score', minScore, threshold !== undefined ? `relevance threshold: ${threshold}` : ''),
    field('Metadata filter (JSON)', filter),
    h('button', { type: 'submit', id: 'search-submit', text: 'Search' }),
    h('button', {
      type: 'button', id: 'search-clear', text: 'Newest first',
      onclick: () => { query.value = ''; filter.value = ''; search(); },
    }),
  );

  const deleteQuery = h('input', { type: 'text', name: 'delete_query', id: 'delete-query', placeholder: 'every word must occur' });
  const deleteFilter = h('textarea', { name: 'delete_filter', id: 'delete-filter', rows: '2', placeholder: '{"topic": "food"}' });
  const deleteButton = confirmButton('Delete matching entries', 'Confirm: delete them', async () => {
    let filterValue;
    try {
      filterValue = parseFilter(deleteFilter.value);
    } catch (error) {
      ctx.notify(error.message);
      return;
    }
    const body = { project_id: project };
    if (deleteQuery.value.trim()) body.query = deleteQuery.value;
    if (filterValue) body.filter = filterValue;
    try {
      const answer = await api.post(`${scope}/memories/delete`, body);
      await list(null);
      ctx.notify(`Deleted ${answer.deleted} entr${answer.deleted === 1 ? 'y' : 'ies'} of ${project ? `project ${project}` : 'the global scope'}.`, 'info');
    } catch (error) {
      ctx.notify(ctx.describe(error));
    }
  }, { id: 'delete-matching' });

  const projects = projectSelect(ctx.projects, project, (value) => {
    project = value;
    ctx.setParam('project', value);
    search();
  });
  projects.id = 'memories-project';

  root.replaceChildren(
    h('h2', { text: 'Memories' }),
    h('div', { class: 'toolbar' }, field('Project', projects, 'a project shows its entries and the global ones')),
    searchForm,
    caption,
    h(
      'div',
      { class: 'scroll' },
      h(
        'table',
        { id: 'entries' },
        h(
          'thead',
          {},
          h('tr', {}, scoreHead, ['Text', 'When', 'Author', 'Session', 'Project', 'Metadata', 'Expires', ''].map((t) => h('th', { text: t }))),
        ),
        rows,
      ),
    ),
    more,
    h(
      'details',
      { class: 'panel', id: 'delete-by-filter' },
      h('summary', { text: 'Delete by words and/or filter' }),
      h(
        'p',
        { text: 'Deletes the entries of exactly this scope (global, or the selected project) that hold every word and match the filter. Give at least one of the two.' },
      ),
      h('div', { class: 'toolbar' }, field('Words', deleteQuery), field('Metadata filter (JSON)', deleteFilter), deleteButton),
    ),
  );
  await list(null);
}
