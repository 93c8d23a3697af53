// Building the page: every piece of data goes in as text (textContent or
// attribute values), never as markup.

// h builds an element: h('td', {class: 'num', dataset: {x: '1'}, attrs:
// {title: 't'}, on: {click: fn}}, child, ...). Children are nodes, or
// strings and numbers (as text); null, undefined and false are skipped,
// arrays are flattened.
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  setProps(el, props);
  append(el, children);
  return el;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

// s builds an SVG element the same way; attrs are its attributes.
export function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  append(el, children);
  return el;
}

function setProps(el, props) {
  if (!props) return;
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') el.className = value;
    else if (key === 'dataset') Object.assign(el.dataset, value);
    else if (key === 'attrs') for (const [k, v] of Object.entries(value)) { if (v !== undefined && v !== null && v !== false) el.setAttribute(k, String(v)); }
    else if (key === 'on') for (const [k, v] of Object.entries(value)) el.addEventListener(k, v);
    else el[key] = value;
  }
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

// replace puts children in place of what el holds.
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// fmtTime is a Unix-nanoseconds protojson value as local date and time.
export function fmtTime(nanos) {
  if (!nanos) return '—';
  const ms = Number(BigInt(nanos) / 1000000n);
  return new Date(ms).toLocaleString(undefined, { hour12: false });
}

// fmtClock is the time of day only, for timelines within a day.
export function fmtClock(ms) {
  return new Date(ms).toLocaleTimeString(undefined, { hour12: false });
}

// fmtDuration is a duration in ms as "1h 02m", "3m 07s" or "12s".
export function fmtDuration(ms) {
  const negative = ms < 0;
  let rest = Math.round(Math.abs(ms) / 1000);
  const hours = Math.floor(rest / 3600);
  rest -= hours * 3600;
  const minutes = Math.floor(rest / 60);
  const seconds = rest - minutes * 60;
  const pad = (n) => String(n).padStart(2, '0');
  let text;
  if (hours > 0) text = `${hours}h ${pad(minutes)}m`;
  else if (minutes > 0) text = `${minutes}m ${pad(seconds)}s`;
  else text = `${seconds}s`;
  return negative ? '-' + text : text;
}

// shortID shortens a definition id for tables; the whole id is its title.
export function shortID(id) {
  if (!id) return '—';
  return id.length > 14 ? id.slice(0, 12) + '…' : id;
}

export function badge(text, kind) {
  return h('span', { class: 'badge ' + (kind || String(text).toLowerCase()) }, text);
}

// coalesce returns schedule(key, fn): fn runs once, shortly after the
// first schedule of key, however many events asked for it meanwhile. A
// run of key never overlaps another: one asked for while the last one's
// reads are still out (fn returns their promise) runs after it ends, so
// that an older answer, arriving last on a slow network, never draws over
// a newer one (the operations timeline once showed 19 operations of 21,
// and no "Older operations…", that way).
export function coalesce(delayMs = 120) {
  const pending = new Map();
  const running = new Map();
  function start(key, fn) {
    pending.delete(key);
    const run = { again: null };
    running.set(key, run);
    Promise.resolve().then(fn).catch((err) => console.error(err)).finally(() => {
      running.delete(key);
      if (run.again) schedule(key, run.again);
    });
  }
  function schedule(key, fn) {
    if (pending.has(key)) return;
    const run = running.get(key);
    if (run) {
      run.again = fn;
      return;
    }
    pending.set(key, setTimeout(() => start(key, fn), delayMs));
  }
  return schedule;
}

// flash shows a message under the header for a few seconds.
export function flash(text, kind = 'info') {
  const el = document.getElementById('flash');
  replace(el, h('span', { class: kind }, text));
  el.hidden = false;
  clearTimeout(flash.timer);
  flash.timer = setTimeout(() => { el.hidden = true; }, 6000);
}
