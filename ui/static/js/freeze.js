// The freeze banner under the header, on every page: the freeze window
// active now (no rollout starts or progresses but reverts and overrides)
// and when it ends, and the windows coming within a week, as the board's
// freeze_windows/list answers (models.FreezeActive, models.FreezeUpcoming).
// It is read again when a window is added or removed (freeze_changed),
// when the stream goes live, and when the active one ends or the next one
// starts.
import { listFreezeWindows } from './api.js';
import { h, replace, fmtTime } from './dom.js';

// upcomingShown bounds the windows listed as coming.
const upcomingShown = 3;

export function freezeBanner(el) {
  // nextChange: Unix ms of the moment the banner goes stale (the active
  // window's end, the next one's start); 0 for none.
  let nextChange = 0;
  let reading = false;

  async function reload() {
    if (reading) return;
    reading = true;
    try {
      render(await listFreezeWindows());
    } catch {
      // The page says when the board does not answer (#unreachable);
      // the banner keeps what it showed.
    } finally {
      reading = false;
    }
  }

  function render(resp) {
    const upcoming = (resp.upcoming || []).slice(0, upcomingShown);
    const ms = (nanos) => Number(BigInt(nanos || 0) / 1000000n);
    const changes = [resp.active_until, ...upcoming.map((o) => o.starts_at)].map(ms).filter((t) => t > 0);
    nextChange = changes.length ? Math.min(...changes) : 0;
    if (!resp.active && upcoming.length === 0) {
      el.hidden = true;
      replace(el);
      return;
    }
    el.hidden = false;
    el.classList.toggle('active', Boolean(resp.active));
    replace(el,
      resp.active
        ? h('span', { dataset: { testid: 'freeze-active' } },
          h('strong', null, 'Frozen'), ' by ', h('span', { class: 'mono' }, resp.active),
          ' until ', h('strong', null, fmtTime(resp.active_until)),
          ': no rollout starts or progresses except reverts and overrides.')
        : h('span', null, 'No freeze now.'),
      upcoming.length
        ? h('span', { class: 'muted', dataset: { testid: 'freeze-upcoming' } }, ' Coming: ',
          ...upcoming.map((o, i) => [i ? '; ' : '', h('span', { class: 'mono' }, o.name), ' ', fmtTime(o.starts_at), ' – ', fmtTime(o.ends_at)]))
        : '');
  }

  return {
    reload,
    onEvent(type) {
      if (type === 'freeze_changed') reload();
    },
    tick() {
      if (nextChange && Date.now() >= nextChange) {
        nextChange = 0;
        reload();
      }
    },
  };
}
