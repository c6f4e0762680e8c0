// Profile card: the compact summary an agent receives in its system prompt (GET {scope}/graph/profile-card).

import { field, h, projectSelect } from './dom.js';

export async function render(ctx, root) {
  const { api, scope } = ctx;
  let project = ctx.params.get('project') || null;
  const maxEntities = h('input', { type: 'number', id: 'card-max-entities', min: '1', max: '100', value: ctx.params.get('max_entities') || '12' });
  const maxObservations = h('input', { type: 'number', id: 'card-max-observations', min: '1', max: '50', value: ctx.params.get('max_observations') || '5' });
  const text = h('pre', { id: 'profile-card', class: 'card' });
  const caption = h('p', { id: 'card-caption', class: 'caption' });

  async function load() {
    try {
      const card = await api.get(`${scope}/graph/profile-card`, {
        project_id: project, max_entities: maxEntities.value, max_observations: maxObservations.value,
      });
      text.textContent = card.text;
      text.hidden = !card.text;
      caption.textContent = card.text
        ? `${card.entities.length} entities and ${(card.relations || []).length} relations, exactly as the agent receives them${card.truncated ? ' (facts left out to keep within the card\u2019s budget)' : ''}.`
        : 'The graph holds nothing current here: the agent receives an empty card.';
    } catch (error) {
      ctx.notify(ctx.describe(error));
    }
  }

  const projects = projectSelect(ctx.projects, project, (value) => {
    project = value;
    ctx.setParam('project', value);
    load();
  });
  projects.id = 'card-project';
  root.replaceChildren(
    h('h2', { text: 'Profile card' }),
    h(
      'form',
      { class: 'toolbar', id: 'card-form', onsubmit: (event) => { event.preventDefault(); load(); } },
      field('Project', projects),
      field('Entities at most', maxEntities),
      field('Facts per entity at most', maxObservations),
      h('button', { type: 'submit', id: 'card-refresh', text: 'Show' }),
    ),
    caption,
    text,
  );
  await load();
}
