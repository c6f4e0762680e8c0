// Building the page from elements and text nodes only: every text the API returns goes in as text, never as markup.

export function h(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'text') node.textContent = String(value);
    else if (name === 'class') node.className = value;
    else if (name === 'dataset') Object.assign(node.dataset, value);
    else if (name.startsWith('on') && typeof value === 'function') node.addEventListener(name.slice(2), value);
    else if (name in node && typeof value !== 'string') node[name] = value;
    else node.setAttribute(name, value === true ? '' : String(value));
  }
  append(node, children);
  return node;
}

export function append(node, children) {
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const SVG = 'http://www.w3.org/2000/svg';

export function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  return append(node, children);
}

export function clear(node) {
  node.replaceChildren();
  return node;
}

export function field(label, control, hint) {
  const note = hint instanceof Node ? hint : hint ? h('small', { text: hint }) : null;
  return h('label', { class: 'field' }, h('span', { text: label }), control, note);
}

/** A button that asks once more before it acts: the first click arms it, the second runs `action`. */
export function confirmButton(label, confirmLabel, action, props = {}) {
  const button = h('button', { type: 'button', class: 'danger', text: label, ...props });
  let armed = false;
  let timer = null;
  button.addEventListener('click', async () => {
    if (!armed) {
      armed = true;
      button.textContent = confirmLabel;
      button.classList.add('armed');
      timer = setTimeout(() => {
        armed = false;
        button.textContent = label;
        button.classList.remove('armed');
      }, 6000);
      return;
    }
    clearTimeout(timer);
    button.disabled = true;
    try {
      await action();
    } finally {
      button.disabled = false;
      armed = false;
      button.textContent = label;
      button.classList.remove('armed');
    }
  });
  return button;
}

/** A timestamp as the API gives it (RFC 3339, UTC), shortened for reading; '' for null. */
export function when(value) {
  if (!value) return '';
  return String(value).replace('T', ' ').replace(/\.\d+(?=Z$)/, '');
}

/** A project selector: global scope first, then the user's projects; `onChange(projectOrNull)`. */
export function projectSelect(projects, current, onChange) {
  const select = h(
    'select',
    { name: 'project', 'aria-label': 'Project' },
    h('option', { value: '', text: '(global)' }),
    projects.map((p) => h('option', { value: p, text: p })),
  );
  if (current && !projects.includes(current)) select.append(h('option', { value: current, text: current }));
  select.value = current || '';
  select.addEventListener('change', () => onChange(select.value || null));
  return select;
}
