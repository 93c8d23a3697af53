// The dashboard: a hash router over three pages, one event stream for the
// page's whole life, and a one-second tick for the clocks on screen.
import { followEvents } from './sse.js';
import { onReach } from './api.js';
import { replace } from './dom.js';
import { lrpsPage } from './lrps.js';
import { lrpPage } from './lrp.js';
import { cellsPage } from './cells.js';
import { freezeBanner } from './freeze.js';

const view = document.getElementById('view');
const freeze = freezeBanner(document.getElementById('freeze'));
let current = null;
// wasLive: the stream has been live once. The first time it goes live
// the page re-reads what it shows, since a change between its first read
// and the subscription would otherwise be missed; later reconnects resume
// with Last-Event-ID and miss nothing.
let wasLive = false;

function route() {
  const hash = location.hash || '#/lrps';
  const parts = hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  if (parts[0] === 'lrps' && parts[1]) return { name: 'lrp', make: () => lrpPage(parts[1]) };
  if (parts[0] === 'cells') return { name: 'cells', make: () => cellsPage() };
  return { name: 'lrps', make: () => lrpsPage() };
}

function show() {
  if (current && current.dispose) current.dispose();
  const r = route();
  for (const a of document.querySelectorAll('nav a')) a.classList.toggle('active', a.dataset.nav === (r.name === 'lrp' ? 'lrps' : r.name));
  current = r.make();
  replace(view, current.el);
  current.reload();
}

function setConnection(state, detail) {
  const el = document.getElementById('connection');
  el.dataset.state = state;
  el.className = 'connection ' + state;
  el.textContent = state === 'live' ? '● live' : state === 'reconnecting' ? '○ reconnecting…' : '○ connecting…';
  el.title = detail ? 'event stream: ' + detail : 'event stream';
  if (state === 'live') {
    // A stream the board answers: it is reachable again.
    document.getElementById('unreachable').hidden = true;
    if (!wasLive && current) current.reload();
    if (!wasLive) freeze.reload();
    wasLive = true;
  }
}

// A request that gets no answer at all shows why that may be (index.html's
// #unreachable); the next answer hides it again. Without a client
// certificate under mutual TLS the browser gets no page to show this
// (the handshake of the page itself fails); with the page already loaded
// it does, when a later request's handshake is refused.
onReach((ok, detail) => {
  const el = document.getElementById('unreachable');
  el.hidden = ok;
  if (!ok) document.getElementById('unreachable-detail').textContent = detail;
});

window.addEventListener('hashchange', show);
show();
followEvents({
  onState: setConnection,
  onEvent: (type, payload) => {
    freeze.onEvent(type);
    if (type === 'events_lost') freeze.reload();
    if (!current) return;
    if (type === 'events_lost') current.reload();
    else current.onEvent(type, payload);
  },
});
freeze.reload();
setInterval(() => {
  freeze.tick();
  if (current && current.tick) current.tick();
}, 1000);
