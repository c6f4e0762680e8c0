// The console's entry: sign-in, the view named by the link (?app=A&user=U&view=...), the message line.

import { Api, ApiError, describe } from './api.js';
import { h } from './dom.js';
import * as card from './card.js';
import * as erase from './erase.js';
import * as graph from './graph.js';
import * as learning from './learning.js';
import * as memories from './memories.js';
import * as usage from './usage.js';
import * as users from './users.js';

const VIEWS = {
  memories: { title: 'Memories', module: memories },
  graph: { title: 'Graph', module: graph },
  card: { title: 'Profile card', module: card },
  usage: { title: 'Usage', module: usage },
  learning: { title: 'Learning', module: learning },
  erase: { title: 'Erase this user', module: erase },
};
const KEY_STORAGE = 'agentmem.console.key';

const $ = (id) => document.getElementById(id);

function notify(text, kind = 'error') {
  const line = $('message');
  line.textContent = text;
  line.className = kind;
  line.hidden = !text;
}

/** The console's own URL with these query parameters (a shareable link). */
function linkTo(values) {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(values)) {
    if (value !== undefined && value !== null && value !== '') params.set(name, value);
  }
  return `console?${params}`;
}

/** Change one parameter of the address bar without reloading (the link stays shareable). */
function setParam(name, value) {
  const params = new URLSearchParams(location.search);
  if (value === undefined || value === null || value === '') params.delete(name);
  else params.set(name, value);
  history.replaceState(null, '', `console?${params}`);
}

function showSignIn(values, message) {
  $('sign-in').hidden = false;
  $('nav').hidden = true;
  $('who').hidden = true;
  $('sign-in-app').value = values.app || '';
  $('sign-in-user').value = values.user || '';
  $('sign-in-view').value = VIEWS[values.view] ? values.view : 'memories';
  $('sign-in-key').value = '';
  if (message) notify(message);
  ($('sign-in-app').value ? $('sign-in-key') : $('sign-in-app')).focus();
}

function showNav(app, user, current) {
  const nav = $('nav');
  nav.replaceChildren(
    ...Object.entries(VIEWS).map(([name, view]) =>
      h('a', {
        href: linkTo({ app, user, view: name }),
        text: view.title,
        id: `nav-${name}`,
        'aria-current': name === current ? 'page' : null,
      }),
    ),
  );
  nav.hidden = false;
  $('who-text').textContent = `app ${app} · user ${user}`;
  $('switch-user').href = linkTo({ app, view: current });
  $('who').hidden = false;
}

/** A first call failed: back to the sign-in form for a key refused (401, 403), else the message. */
function refused(api, values, error) {
  if (error instanceof ApiError && (error.status === 401 || error.status === 403)) {
    const hadKey = Boolean(api.key);
    sessionStorage.removeItem(KEY_STORAGE);
    const message = hadKey || error.status === 403
      ? describe(error, values.app)
      : `This server needs an API key of app “${values.app}”: enter it below.`;
    return showSignIn(values, message);
  }
  return notify(describe(error, values.app));
}

/** No user named: the app's users, to pick one (GET /v1/apps/{app}/users). */
async function showUsers(api, values) {
  let first;
  try {
    first = await users.firstPage(api, values.app);
  } catch (error) {
    return refused(api, values, error);
  }
  $('who-text').textContent = `app ${values.app}`;
  $('switch-user').hidden = true;
  $('who').hidden = false;
  document.title = `Users · ${values.app} · Agent memory console`;
  const root = $('view');
  root.dataset.view = 'users';
  const view = VIEWS[values.view] ? values.view : 'memories';
  const context = { api, app: values.app, view, linkTo, notify, describe: (error) => describe(error, values.app) };
  users.render(context, root, first);
  root.dataset.ready = 'true';
}

async function start() {
  const params = new URLSearchParams(location.search);
  const values = { app: params.get('app'), user: params.get('user'), view: params.get('view') || 'memories' };
  $('sign-in-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const form = new FormData(event.target);
    const key = String(form.get('key') || '');
    if (key) sessionStorage.setItem(KEY_STORAGE, key);
    location.assign(linkTo({ app: form.get('app'), user: form.get('user'), view: form.get('view') }));
  });
  $('sign-out').addEventListener('click', () => {
    sessionStorage.removeItem(KEY_STORAGE);
    location.assign(linkTo({ app: values.app }));
  });
  if (!values.app) return showSignIn(values);
  const api = new Api(new URL('.', document.baseURI), sessionStorage.getItem(KEY_STORAGE));
  if (!values.user) return showUsers(api, values);
  const view = VIEWS[values.view];
  if (!view) return showSignIn(values, `There is no view “${values.view}”: pick one below.`);

  const scope = Api.scope(values.app, values.user);
  let projects;
  try {
    // One cheap call checks the key before anything is drawn, and lists the user's projects.
    projects = (await api.get(`${scope}/projects`, { limit: 1000 })).projects;
  } catch (error) {
    return refused(api, values, error);
  }
  showNav(values.app, values.user, values.view);
  document.title = `${view.title} · ${values.user} · Agent memory console`;
  const root = $('view');
  root.dataset.view = values.view;
  const context = {
    api,
    app: values.app,
    user: values.user,
    scope,
    projects,
    params,
    notify,
    setParam,
    linkTo,
    describe: (error) => describe(error, values.app),
  };
  try {
    await view.module.render(context, root);
  } catch (error) {
    notify(describe(error, values.app));
  }
  root.dataset.ready = 'true';
}

start();
