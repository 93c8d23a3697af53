// Server-Sent Events, read from a fetch response: the board's event stream
// is POST /v1/events, which EventSource cannot send.

// createSSEParser returns push(text): feed it the stream's text as it
// arrives, in pieces of any size; it calls onEvent({id, event, data}) for
// every complete event. A line is "field: value" (one space after the
// colon is dropped); a line starting with ":" is a comment; a blank line
// ends the event. id is "" when the event carried none (events_lost), and
// data lines are joined with "\n". Lines end in \n, \r\n or \r.
export function createSSEParser(onEvent) {
  let buffer = '';
  let pendingCR = false;
  let id = '';
  let event = '';
  let data = [];

  function line(text) {
    if (text === '') {
      if (data.length > 0 || event !== '') {
        onEvent({ id, event: event || 'message', data: data.join('\n') });
      }
      id = '';
      event = '';
      data = [];
      return;
    }
    if (text.startsWith(':')) return;
    const colon = text.indexOf(':');
    const field = colon < 0 ? text : text.slice(0, colon);
    let value = colon < 0 ? '' : text.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'id') id = value;
    else if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
  }

  return function push(text) {
    if (pendingCR && text.startsWith('\n')) text = text.slice(1);
    pendingCR = false;
    buffer += text;
    for (;;) {
      const end = buffer.search(/[\r\n]/);
      if (end < 0) return;
      const crlf = buffer[end] === '\r' && buffer[end + 1] === '\n';
      if (buffer[end] === '\r' && end === buffer.length - 1) pendingCR = true;
      line(buffer.slice(0, end));
      buffer = buffer.slice(end + (crlf ? 2 : 1));
    }
  };
}

// nextBackoff doubles a reconnect delay from 1 s up to 10 s:
// 1000 → 2000 → 4000 → 8000 → 10000 → 10000.
export function nextBackoff(ms) {
  if (!ms) return 1000;
  return Math.min(ms * 2, 10000);
}

// followEvents keeps one event stream open for as long as the page lives:
// it reconnects after a failure with backoff, sending the id of the last
// event it saw as Last-Event-ID, so that nothing between is missed (the
// board says events_lost when it no longer has them). onState gets
// 'connecting', 'live' or 'reconnecting'.
//
// The board writes a heartbeat comment every 15 s on an idle stream; a
// stream silent for SILENCE_MS (three heartbeats) is taken for a dead
// connection that no error announced, and reopened.
const SILENCE_MS = 45000;

export function followEvents({ onEvent, onState, fetchFn = fetch }) {
  let lastId = '';
  let backoff = 0;

  async function once() {
    const headers = { 'Content-Type': 'application/json', Accept: 'text/event-stream' };
    if (lastId !== '') headers['Last-Event-ID'] = lastId;
    const abort = new AbortController();
    let heard = Date.now();
    const watchdog = setInterval(() => {
      if (Date.now() - heard > SILENCE_MS) abort.abort(new Error('the stream fell silent'));
    }, 5000);
    try {
      await read(headers, abort.signal, () => { heard = Date.now(); });
    } finally {
      clearInterval(watchdog);
    }
  }

  async function read(headers, signal, onBytes) {
    const response = await fetchFn('/v1/events', { method: 'POST', headers, body: '{}', cache: 'no-store', signal });
    const type = response.headers.get('Content-Type') || '';
    if (!response.ok || !type.startsWith('text/event-stream')) {
      let message = 'HTTP ' + response.status;
      try {
        const answer = await response.json();
        if (answer.error) message = (answer.error.type || 'Error') + ': ' + (answer.error.message || '');
      } catch (_) { /* not JSON: the status says enough */ }
      throw new Error(message);
    }
    onState('live');
    backoff = 0;
    const push = createSSEParser((e) => {
      if (e.id !== '') lastId = e.id;
      let payload = null;
      try {
        payload = e.data === '' ? {} : JSON.parse(e.data);
      } catch (_) {
        return;
      }
      // A page that fails to show an event must not cost the stream.
      try {
        onEvent(e.event, payload);
      } catch (err) {
        console.error('event ' + e.event + ': ' + err.message);
      }
    });
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      onBytes();
      push(decoder.decode(value, { stream: true }));
    }
    throw new Error('the stream ended');
  }

  (async () => {
    onState('connecting');
    for (;;) {
      try {
        await once();
      } catch (err) {
        onState('reconnecting', err.message);
      }
      backoff = nextBackoff(backoff);
      await new Promise((resolve) => setTimeout(resolve, backoff));
    }
  })();
}
