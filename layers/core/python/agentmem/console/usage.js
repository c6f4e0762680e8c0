// Usage: the app's metering per UTC day (GET /v1/apps/{app}/usage), as small bar charts and a table, with
// each day's cost estimated from AWS list prices (the API's estimate and its basis, shown as such).

import { clear, field, h, svg } from './dom.js';

const MEASURES = [
  { name: 'requests', title: 'Requests', colour: '#2f6fb3' },
  { name: 'items_stored', title: 'Items stored', colour: '#2e8b57' },
  { name: 'embeddings', title: 'Embeddings', colour: '#c2571a' },
  { name: 'cost', title: 'Estimated cost (USD)', colour: '#7a4fa3', value: (d) => d.estimated_cost_usd.total, money: true },
];
const COLUMNS = [
  ...MEASURES.filter((m) => !m.money),
  { name: 'read_units', title: 'Read units' },
  { name: 'write_units', title: 'Write units' },
  { name: 'cost', title: 'Estimated cost (USD)', value: (d) => d.estimated_cost_usd.total, money: true },
];

const valueOf = (measure, day) => (day ? (measure.value ? measure.value(day) : day[measure.name]) || 0 : 0);
const shown = (measure, value) => (measure.money ? `$${value.toFixed(4)}` : String(value));
const WIDTH = 720;
const HEIGHT = 120;
const BOTTOM = 18;
const CHAR = 7; // px a tick label's character takes at the chart's font size (generous)

/** The axis top: the next 1, 2, 2.5 or 5 times a power of ten at or above the largest value (a day's $0.0015
 * is drawn on a $0.002 axis, not on $1); counts keep an axis of at least 1. */
function axisTop(measure, values) {
  const largest = Math.max(0, ...values);
  if (largest <= 0) return measure.money ? 0.01 : 1;
  const power = 10 ** Math.floor(Math.log10(largest));
  const top = [1, 2, 2.5, 5, 10].map((m) => m * power).find((candidate) => candidate >= largest * (1 - 1e-9));
  return measure.money ? top : Math.max(1, Math.ceil(top));
}

const tick = (measure, value) => (measure.money ? `$${Number(value.toPrecision(3))}` : String(value));

/** The last `count` UTC dates, oldest first (days without usage are absent from the API's answer). */
function lastDays(count) {
  const today = new Date();
  const days = [];
  for (let back = count - 1; back >= 0; back -= 1) {
    const day = new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate() - back));
    days.push(day.toISOString().slice(0, 10));
  }
  return days;
}

function chart(measure, days, byDate) {
  const values = days.map((d) => valueOf(measure, byDate.get(d)));
  const top = axisTop(measure, values);
  const topLabel = tick(measure, top);
  const LEFT = Math.max(44, 10 + CHAR * topLabel.length); // room for the axis label, never clipped
  const slot = (WIDTH - LEFT) / days.length;
  const bar = Math.max(1, slot * 0.7);
  const plot = HEIGHT - BOTTOM - 6;
  const total = values.reduce((a, b) => a + b, 0);
  return h(
    'figure',
    { class: 'chart', dataset: { measure: measure.name, total: String(total) } },
    h('figcaption', { text: `${measure.title}: ${shown(measure, total)} in ${days.length} days` }),
    svg(
      'svg',
      { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, width: WIDTH, height: HEIGHT, role: 'img', 'aria-label': `${measure.title} per day` },
      svg('line', { x1: LEFT, y1: HEIGHT - BOTTOM, x2: WIDTH, y2: HEIGHT - BOTTOM, class: 'axis' }),
      svg('text', { x: LEFT - 6, y: 12, 'text-anchor': 'end', class: 'tick axis-top' }, topLabel),
      svg('text', { x: LEFT - 6, y: HEIGHT - BOTTOM, 'text-anchor': 'end', class: 'tick' }, '0'),
      svg('text', { x: LEFT, y: HEIGHT - 4, class: 'tick' }, days[0]),
      svg('text', { x: WIDTH, y: HEIGHT - 4, 'text-anchor': 'end', class: 'tick' }, days[days.length - 1]),
      values.map((value, i) => {
        const tall = (value / top) * plot;
        return svg(
          'rect',
          {
            x: (LEFT + i * slot + (slot - bar) / 2).toFixed(1), y: (HEIGHT - BOTTOM - tall).toFixed(1),
            width: bar.toFixed(1), height: tall.toFixed(1), fill: measure.colour, 'data-date': days[i], 'data-value': value,
          },
          svg('title', {}, `${days[i]}: ${shown(measure, value)} ${measure.title.toLowerCase()}`),
        );
      }),
    ),
  );
}

export async function render(ctx, root) {
  const span = h(
    'select',
    { id: 'usage-days' },
    [7, 31, 90].map((n) => h('option', { value: String(n), text: `last ${n} days` })),
  );
  span.value = ctx.params.get('days') || '31';
  const charts = h('div', { id: 'usage-charts' });
  const basis = h('p', { id: 'usage-cost-basis', class: 'caption' });
  const table = h('table', { id: 'usage-table' });

  async function load() {
    const days = Number(span.value);
    let usage;
    try {
      usage = await ctx.api.get(`v1/apps/${encodeURIComponent(ctx.app)}/usage`, { days });
    } catch (error) {
      ctx.notify(ctx.describe(error));
      return;
    }
    const byDate = new Map(usage.days.map((d) => [d.date, d]));
    const dates = lastDays(days);
    clear(charts).append(...MEASURES.map((m) => chart(m, dates, byDate)));
    const rows = [...usage.days].sort((a, b) => (a.date < b.date ? 1 : -1));
    clear(table).append(
      h('thead', {}, h('tr', {}, h('th', { text: 'date (UTC)' }), COLUMNS.map((m) => h('th', { text: m.title })))),
      h(
        'tbody',
        {},
        rows.length
          ? rows.map((d) =>
              h('tr', {}, h('td', { text: d.date }), COLUMNS.map((m) => h('td', { class: 'number', text: shown(m, valueOf(m, d)) }))),
            )
          : h('tr', {}, h('td', { colspan: String(COLUMNS.length + 1), class: 'empty', text: 'No usage in this period.' })),
      ),
    );
    basis.textContent = `Estimated cost: ${usage.cost_basis}. It prices the requests, their DynamoDB request units, Lambda time, embedding tokens and the extraction model's tokens (as the basis says); the authorizer, logs, traces, storage and the deployment's fixed monthly costs are not in it.`;
  }

  span.addEventListener('change', () => {
    ctx.setParam('days', span.value);
    load();
  });
  root.replaceChildren(
    h('h2', { text: `Usage of app ${ctx.app}` }),
    h('p', { class: 'caption', text: 'Metered per app and UTC day: every request, the items stored (entries, facts, relations, episodes), the texts embedded, and the DynamoDB request units the requests consumed.' }),
    h('div', { class: 'toolbar' }, field('Period', span)),
    charts,
    table,
    basis,
  );
  await load();
}
