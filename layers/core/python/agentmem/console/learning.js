// Learning: what the app learns and whether it runs (GET /v1/apps/{app}/extraction: its state, and why when
// its model fails), and the parked jobs, each with why it failed (GET /v1/apps/{app}/extraction/jobs), page by page.

import { clear, h } from './dom.js';

const JOB_COLUMNS = ['parked at', 'user', 'session', 'strategy', 'why', 'entries'];

function stateLine(state) {
  const trouble = state.status.startsWith('model_') || state.status === 'needs_model' || state.status === 'paused_budget';
  return h(
    'dl',
    { id: 'learning-state' },
    h('dt', { text: 'state' }),
    h('dd', {}, h('span', { id: 'learning-status', class: trouble ? 'tag warn' : 'tag', text: state.status })),
    h('dt', { text: 'model' }),
    h('dd', { id: 'learning-model', text: state.model || 'none' }),
    h('dt', { text: 'tokens this month' }),
    h('dd', { text: String(state.tokens_this_month) }),
    h('dt', { text: 'why' }),
    h('dd', { id: 'learning-message', text: state.message }),
  );
}

function jobRow(job) {
  return h(
    'tr',
    { dataset: { id: job.job_id } },
    h('td', { text: job.parked_at }),
    h('td', { text: job.user }),
    h('td', { text: job.project ? `${job.session} (project ${job.project})` : job.session }),
    h('td', { text: job.strategy }),
    h('td', { class: 'failure', text: job.failure }),
    h('td', { class: 'number', text: String(job.entry_ids.length) }),
  );
}

export async function render(ctx, root) {
  const base = `v1/apps/${encodeURIComponent(ctx.app)}/extraction`;
  const extraction = await ctx.api.get(base);
  const body = h('tbody', { id: 'jobs-body' });
  const more = h('button', { type: 'button', id: 'jobs-more', text: 'More jobs', hidden: true });
  let cursor = null;

  async function loadJobs() {
    let page;
    try {
      page = await ctx.api.get(`${base}/jobs`, { limit: 20, cursor });
    } catch (error) {
      ctx.notify(ctx.describe(error));
      return;
    }
    if (!cursor && page.jobs.length === 0) {
      body.append(h('tr', {}, h('td', { colspan: String(JOB_COLUMNS.length), class: 'empty', text: 'No parked job.' })));
    }
    body.append(...page.jobs.map(jobRow));
    cursor = page.next_cursor;
    more.hidden = !cursor;
  }

  more.addEventListener('click', loadJobs);
  const strategies = extraction.strategies.length
    ? extraction.strategies.map((s) => `${s.name} (${s.type})`).join(', ')
    : 'none';
  clear(root).append(
    h('h2', { text: `What app ${ctx.app} learns` }),
    h('p', { class: 'caption', text: `Strategies: ${strategies}. A model reads each conversation after it was written and keeps what it learnt (docs/extraction.md).` }),
    stateLine(extraction.state),
    h('h3', { text: 'Parked jobs' }),
    h('p', { class: 'caption', text: 'Batches whose model calls failed on every attempt, oldest first, each with why. AgentCore’s StartMemoryExtractionJob runs one again.' }),
    h('table', { id: 'jobs-table' }, h('thead', {}, h('tr', {}, JOB_COLUMNS.map((c) => h('th', { text: c })))), body),
    more,
  );
  await loadJobs();
}
