// Graph: the user's knowledge graph drawn with Cytoscape.js (vendor/), the entities listed as text, an
// entity's facts with their history on both time axes, corrections, and an as_of slider.

import { clear, confirmButton, field, h, projectSelect, when } from './dom.js';

const COLOURS = ['#2f6fb3', '#c2571a', '#2e8b57', '#8e44ad', '#b8860b', '#c0392b', '#16808a', '#6d4c41', '#5b6b7a', '#d35492'];
const SHAPES = ['ellipse', 'round-rectangle', 'diamond', 'hexagon', 'triangle', 'star', 'pentagon', 'octagon', 'barrel', 'vee'];
const MAX_PAGES = 20;
const TIMELINE_ENTITIES = 50;

let cytoscapeLoaded = null;

/** The library is loaded only by this view (a script file of this origin: the CSP allows nothing else). */
function loadCytoscape() {
  if (!cytoscapeLoaded) {
    cytoscapeLoaded = new Promise((resolve, reject) => {
      const script = document.createElement('script');
      script.src = 'console/vendor/cytoscape.min.js';
      script.onload = () => resolve(window.cytoscape);
      script.onerror = () => reject(new Error('the graph library (console/vendor/cytoscape.min.js) did not load'));
      document.head.append(script);
    });
  }
  return cytoscapeLoaded;
}

/** The whole graph (every page), current or as of a valid time. */
async function readGraph(api, scope, project, asOf) {
  const entities = new Map();
  const relations = new Map();
  let cursor;
  let truncated = false;
  for (let n = 0; n < MAX_PAGES; n += 1) {
    const page = await api.get(`${scope}/graph`, { project_id: project, as_of: asOf, cursor });
    for (const entity of page.entities) {
      const known = entities.get(entity.name);
      if (known) {
        const ids = new Set(known.observations.map((o) => o.id));
        known.observations.push(...entity.observations.filter((o) => !ids.has(o.id)));
      } else entities.set(entity.name, { ...entity, observations: [...entity.observations] });
    }
    for (const relation of page.relations) relations.set(relation.id, relation);
    cursor = page.next_cursor;
    if (!cursor) break;
    truncated = n === MAX_PAGES - 1;
  }
  return { entities: [...entities.values()], relations: [...relations.values()], truncated };
}

/** Run `task` over `items`, `width` at a time. */
async function eachLimited(items, width, task) {
  const queue = [...items];
  const workers = Array.from({ length: Math.min(width, queue.length) }, async () => {
    while (queue.length) await task(queue.shift());
  });
  await Promise.all(workers);
}

/** A type's colour and shape, from its name alone: the same in every project and at every as_of. */
function styleOf(type) {
  let hash = 7;
  for (const char of type || 'general') hash = (hash * 31 + char.codePointAt(0)) >>> 0;
  return { colour: COLOURS[hash % COLOURS.length], shape: SHAPES[Math.floor(hash / COLOURS.length) % SHAPES.length] };
}

const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`;

/** How a fact of a history stands: current, superseded (replaced in one step) or invalidated. */
function standing(fact, facts) {
  if (!fact.expired_at) return { label: 'current', by: null };
  const by = facts.find((o) => o !== fact && o.recorded_at === fact.expired_at && o.valid_from === fact.valid_to);
  return by ? { label: 'superseded', by } : { label: 'invalidated', by: null };
}

export async function render(ctx, root) {
  const { api, scope } = ctx;
  let project = ctx.params.get('project') || null;
  let asOf = ctx.params.get('as_of') || null;
  let selected = ctx.params.get('entity') || null;
  let graph = { entities: [], relations: [] };
  let moments = [];
  let cy = null;

  const canvas = h('div', { id: 'graph-canvas', role: 'img', 'aria-label': 'The knowledge graph' });
  const legend = h('ul', { id: 'graph-legend', class: 'legend' });
  const summary = h('p', { id: 'graph-summary', class: 'caption' });
  const filterInput = h('input', { type: 'search', id: 'entity-filter', placeholder: 'Filter by name, type or fact' });
  const list = h('ul', { id: 'entity-list', class: 'entities' });
  const detail = h('section', { id: 'entity-detail', class: 'panel', hidden: true });
  const slider = h('input', { type: 'range', id: 'as-of-slider', min: '0', max: '0', step: '1', value: '0' });
  const sliderLabel = h('output', { id: 'as-of-label', for: 'as-of-slider' });
  const nowButton = h('button', { type: 'button', id: 'as-of-now', text: 'Now' });
  const timelineNote = h('small', { id: 'timeline-note' });

  const types = () => [...new Set(graph.entities.map((e) => e.entity_type || 'general'))].sort();

  async function draw() {
    const cytoscape = await loadCytoscape();
    const names = new Set(graph.entities.map((e) => e.name));
    const nodes = graph.entities.map((e) => ({
      data: { id: e.name, label: e.name, colour: styleOf(e.entity_type).colour, shape: styleOf(e.entity_type).shape },
    }));
    for (const r of graph.relations) {
      for (const end of [r.source, r.target]) {
        if (!names.has(end)) {
          names.add(end);
          nodes.push({ data: { id: end, label: end, colour: '#999999', shape: 'ellipse' }, classes: 'outside' });
        }
      }
    }
    const edges = graph.relations.map((r) => ({ data: { id: `r:${r.id}`, source: r.source, target: r.target, label: r.relation_type } }));
    if (cy) cy.destroy();
    cy = cytoscape({
      container: canvas,
      elements: [...nodes, ...edges],
      style: [
        {
          selector: 'node',
          style: {
            'background-color': 'data(colour)', shape: 'data(shape)', label: 'data(label)',
            'font-size': 11, 'text-valign': 'bottom', 'text-margin-y': 4, width: 26, height: 26,
          },
        },
        { selector: 'node.outside', style: { 'border-width': 1, 'border-style': 'dashed', 'border-color': '#555' } },
        { selector: 'node:selected', style: { 'border-width': 3, 'border-color': '#111' } },
        {
          selector: 'edge',
          style: {
            'curve-style': 'bezier', 'target-arrow-shape': 'triangle', width: 1.5, 'line-color': '#8a94a0',
            'target-arrow-color': '#8a94a0', label: 'data(label)', 'font-size': 9, 'text-rotation': 'autorotate',
            // beside the arrow, not on it (the margin turns with the label)
            'text-margin-y': -8,
            'text-background-color': '#ffffff', 'text-background-opacity': 0.85, 'text-background-padding': 1,
          },
        },
      ],
      layout: { name: nodes.length > 1 ? 'cose' : 'grid', animate: false, randomize: false, nodeDimensionsIncludeLabels: true, padding: 24 },
      minZoom: 0.2,
      maxZoom: 1.5,
    });
    cy.on('tap', 'node', (event) => select(event.target.id()));
    if (selected && cy.getElementById(selected).nonempty()) cy.getElementById(selected).select();
    canvas.cytoscape = cy; // for whoever inspects the drawing (the browser tests)
    canvas.dataset.nodes = String(cy.nodes().length);
    canvas.dataset.edges = String(cy.edges().length);
    clear(legend).append(
      ...types().map((type) => {
        const swatch = h('span', { class: 'swatch' });
        swatch.style.backgroundColor = styleOf(type).colour;
        return h('li', {}, swatch, `${type} (${styleOf(type).shape})`);
      }),
    );
  }

  function listEntities() {
    const words = filterInput.value.trim().toLowerCase();
    const matches = graph.entities.filter((e) => {
      if (!words) return true;
      const text = [e.name, e.entity_type, ...e.observations.map((o) => o.content)].join(' ').toLowerCase();
      return text.includes(words);
    });
    clear(list).append(
      ...matches.map((e) =>
        h(
          'li',
          { dataset: { name: e.name } },
          h(
            'button',
            { type: 'button', class: e.name === selected ? 'entity selected' : 'entity', onclick: () => select(e.name) },
            h('strong', { class: 'entity-name', text: e.name }),
            ' ',
            h('span', { class: 'tag', text: e.entity_type || 'general' }),
            ' ',
            h('span', { class: 'count', text: plural(e.observations.length, 'fact', 'facts') }),
          ),
        ),
      ),
    );
    if (!matches.length) list.append(h('li', { class: 'empty', text: graph.entities.length ? 'No entity matches.' : 'The graph is empty here.' }));
  }

  function describeSlice() {
    const relations = graph.relations.length;
    const facts = graph.entities.reduce((n, e) => n + e.observations.length, 0);
    const counts = [plural(graph.entities.length, 'entity', 'entities'), plural(facts, 'fact', 'facts'), plural(relations, 'relation', 'relations')];
    summary.textContent = `${asOf ? `As of ${when(asOf)}` : 'Now'}: ${counts.join(', ')}${graph.truncated ? ' (cut: too large to draw whole)' : ''}.`;
  }

  async function load() {
    graph = await readGraph(api, scope, project, asOf);
    describeSlice();
    listEntities();
    await draw();
  }

  /** The moments at which the graph changed in valid time: where the slider stops. */
  async function buildTimeline() {
    const stamps = new Set();
    const add = (fact) => {
      if (fact.valid_from) stamps.add(fact.valid_from);
      if (fact.valid_to) stamps.add(fact.valid_to);
    };
    const current = asOf ? await readGraph(api, scope, project, null) : graph;
    const names = current.entities.map((e) => e.name);
    current.entities.forEach((e) => e.observations.forEach(add));
    current.relations.forEach(add);
    await eachLimited(names.slice(0, TIMELINE_ENTITIES), 4, async (name) => {
      const history = await api.get(`${scope}/graph/entities/${encodeURIComponent(name)}/history`, { project_id: project });
      history.observations.forEach(add);
      history.relations.forEach(add);
    });
    moments = [...stamps].sort();
    timelineNote.textContent = names.length > TIMELINE_ENTITIES
      ? `the slider stops at the changes of the first ${TIMELINE_ENTITIES} entities' histories`
      : `${moments.length} moments of change`;
    slider.max = String(moments.length);
    const at = asOf ? moments.findIndex((m) => m >= asOf) : -1;
    slider.value = String(asOf ? (at < 0 ? moments.length : at) : moments.length);
    sliderLabel.textContent = asOf ? `as of ${when(asOf)}` : 'now (current facts)';
    slider.dataset.moments = String(moments.length);
  }

  function factRow(fact, facts, entityName) {
    const { label, by } = standing(fact, facts);
    const actions = h('td', { class: 'actions' });
    if (label === 'current') {
      const replacement = h('input', { type: 'text', class: 'supersede-text', placeholder: 'the corrected fact', hidden: true });
      const save = h('button', { type: 'button', text: 'Save', hidden: true });
      const supersede = h('button', { type: 'button', class: 'supersede', text: 'Supersede' });
      supersede.addEventListener('click', () => {
        replacement.hidden = !replacement.hidden;
        save.hidden = replacement.hidden;
        if (!replacement.hidden) {
          replacement.value = fact.content;
          replacement.focus();
        }
      });
      save.addEventListener('click', () =>
        act(`superseded “${fact.content}”`, () =>
          api.post(`${scope}/graph/observations/${encodeURIComponent(fact.id)}/supersede`, { content: replacement.value, project_id: project }),
        ),
      );
      actions.append(
        h('button', {
          type: 'button', class: 'invalidate', text: 'Invalidate',
          onclick: () => act(`invalidated “${fact.content}”`, () =>
            api.post(`${scope}/graph/observations/${encodeURIComponent(fact.id)}/invalidate`, { project_id: project })),
        }),
        supersede,
        replacement,
        save,
      );
    }
    actions.append(
      confirmButton('Delete', 'Confirm delete', () =>
        act(`deleted “${fact.content}” (it leaves the history too)`, () =>
          api.delete(`${scope}/graph/observations/${encodeURIComponent(fact.id)}`, { project_id: project })),
      { class: 'danger delete-fact' }),
    );
    const status = label === 'superseded' ? `superseded by “${by.content}”` : label;
    return h(
      'tr',
      { class: `fact ${label}`, dataset: { id: fact.id, entity: entityName } },
      h(
        'td',
        { class: 'fact-text' },
        fact.content,
        fact.source
          ? h('span', { class: 'learnt', title: `learnt from a conversation: memory record ${fact.source}`, text: 'learnt' })
          : null,
      ),
      h('td', { class: 'status', text: status }),
      h('td', { class: 'nowrap', text: when(fact.valid_from) }),
      h('td', { class: 'nowrap', text: fact.valid_to ? when(fact.valid_to) : 'open' }),
      h('td', { class: 'nowrap', text: when(fact.recorded_at) }),
      h('td', { class: 'nowrap', text: fact.expired_at ? when(fact.expired_at) : 'still held' }),
      actions,
    );
  }

  function relationRow(relation, name) {
    const outgoing = relation.source === name;
    const current = !relation.expired_at;
    const actions = h('td', { class: 'actions' });
    if (current) {
      actions.append(
        h('button', {
          type: 'button', class: 'invalidate', text: 'Invalidate',
          onclick: () => act(`invalidated ${relation.source} ${relation.relation_type} ${relation.target}`, () =>
            api.post(`${scope}/graph/relations/${encodeURIComponent(relation.id)}/invalidate`, { project_id: project })),
        }),
      );
    }
    actions.append(
      confirmButton('Delete', 'Confirm delete', () =>
        act(`deleted ${relation.source} ${relation.relation_type} ${relation.target}`, () =>
          api.delete(`${scope}/graph/relations/${encodeURIComponent(relation.id)}`, { project_id: project })),
      ),
    );
    return h(
      'tr',
      { class: `relation ${current ? 'current' : 'invalidated'}`, dataset: { id: relation.id } },
      h('td', { text: outgoing ? '→' : '←' }),
      h('td', { text: relation.relation_type }),
      h('td', { text: outgoing ? relation.target : relation.source }),
      h('td', { class: 'status', text: current ? 'current' : 'invalidated' }),
      h('td', { class: 'nowrap', text: when(relation.valid_from) }),
      h('td', { class: 'nowrap', text: relation.valid_to ? when(relation.valid_to) : 'open' }),
      h('td', { class: 'nowrap', text: when(relation.recorded_at) }),
      h('td', { class: 'nowrap', text: relation.expired_at ? when(relation.expired_at) : 'still held' }),
      actions,
    );
  }

  const timeHeads = () => [
    h('th', { text: 'valid from', title: 'valid time: when it became true in the world' }),
    h('th', { text: 'valid to', title: 'valid time: when it stopped being true' }),
    h('th', { text: 'recorded at', title: 'recorded time: when this service learned it' }),
    h('th', { text: 'expired at', title: 'recorded time: when this service stopped holding it current' }),
  ];

  async function showDetail(name) {
    let history;
    try {
      history = await api.get(`${scope}/graph/entities/${encodeURIComponent(name)}/history`, { project_id: project });
    } catch (error) {
      if (error.status === 404) {
        detail.hidden = true;
        return;
      }
      throw error;
    }
    const facts = history.observations;
    const current = facts.filter((o) => !o.expired_at);
    const past = facts.filter((o) => o.expired_at);
    clear(detail).append(
      h('h3', { id: 'entity-title' }, history.name, ' ', h('span', { class: 'tag', text: history.entity_type || 'general' })),
      h('p', { class: 'caption', text: `updated ${when(history.updated_at)} · ${current.length} current fact${current.length === 1 ? '' : 's'}, ${past.length} in the past${history.truncated ? ' (history cut: too large)' : ''}` }),
      h('h4', { text: 'Facts and their history' }),
      h(
        'div',
        { class: 'scroll' },
        h(
          'table',
          { id: 'fact-table' },
          h('thead', {}, h('tr', {}, h('th', { text: 'fact' }), h('th', { text: 'status' }), timeHeads(), h('th', { text: '' }))),
          h('tbody', {}, [...current, ...past].map((f) => factRow(f, facts, history.name))),
        ),
      ),
      h('h4', { text: 'Relations' }),
      history.relations.length
        ? h(
            'div',
            { class: 'scroll' },
            h(
              'table',
              { id: 'relation-table' },
              h('thead', {}, h('tr', {}, h('th', { text: '' }), h('th', { text: 'relation' }), h('th', { text: 'other entity' }), h('th', { text: 'status' }), timeHeads(), h('th', { text: '' }))),
              h('tbody', {}, history.relations.map((r) => relationRow(r, history.name))),
            ),
          )
        : h('p', { class: 'empty', text: 'No relations.' }),
    );
    detail.hidden = false;
  }

  async function select(name) {
    selected = name;
    ctx.setParam('entity', name);
    for (const button of list.querySelectorAll('button.entity')) {
      button.classList.toggle('selected', button.closest('li').dataset.name === name);
    }
    if (cy) {
      cy.elements().unselect();
      const node = cy.getElementById(name);
      if (node.nonempty()) node.select();
    }
    try {
      await showDetail(name);
    } catch (error) {
      ctx.notify(ctx.describe(error));
    }
  }

  /** Run one correction, then show what the API now holds. */
  async function act(done, call) {
    try {
      await call();
      ctx.notify(`Done: ${done}.`, 'info');
    } catch (error) {
      ctx.notify(ctx.describe(error));
    }
    try {
      await load();
      await buildTimeline();
      if (selected) await showDetail(selected);
    } catch (error) {
      ctx.notify(ctx.describe(error));
    }
  }

  async function travel() {
    const index = Number(slider.value);
    asOf = index >= moments.length ? null : moments[index];
    ctx.setParam('as_of', asOf);
    sliderLabel.textContent = asOf ? `as of ${when(asOf)}` : 'now (current facts)';
    try {
      await load();
    } catch (error) {
      ctx.notify(ctx.describe(error));
    }
  }

  slider.addEventListener('input', () => {
    const index = Number(slider.value);
    sliderLabel.textContent = index >= moments.length ? 'now (current facts)' : `as of ${when(moments[index])}`;
  });
  slider.addEventListener('change', travel);
  nowButton.addEventListener('click', () => {
    slider.value = slider.max;
    travel();
  });
  filterInput.addEventListener('input', listEntities);

  const projects = projectSelect(ctx.projects, project, async (value) => {
    project = value;
    asOf = null;
    selected = null;
    detail.hidden = true;
    ctx.setParam('project', value);
    ctx.setParam('as_of', null);
    ctx.setParam('entity', null);
    try {
      await load();
      await buildTimeline();
    } catch (error) {
      ctx.notify(ctx.describe(error));
    }
  });
  projects.id = 'graph-project';

  root.replaceChildren(
    h('h2', { text: 'Knowledge graph' }),
    h(
      'div',
      { class: 'toolbar' },
      field('Project', projects, 'a project shows its facts and the global ones'),
      field('As of (valid time)', h('span', { class: 'slider' }, slider, sliderLabel, nowButton), timelineNote),
    ),
    summary,
    h(
      'div',
      { class: 'graph-layout' },
      h('div', { class: 'graph-drawing' }, canvas, legend),
      h('div', { class: 'graph-side' }, h('h3', { text: 'Entities' }), field('Filter', filterInput), list),
    ),
    detail,
  );
  await load();
  await buildTimeline();
  if (selected) await select(selected);
}
