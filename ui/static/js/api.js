// The board's API as the page calls it: POST with a protojson body; the
// answer is protojson with snake_case names, its `error` field set when
// the call failed.

export class ApiError extends Error {
  constructor(type, message) {
    super(`${type}: ${message}`);
    this.type = type;
  }
}

// reachListeners hear, after each call, whether the board answered it at
// all: false when the request failed without an HTTP answer (the browser
// tells a page no more than that: a board down, a network problem, or a
// TLS handshake refused, as with a client certificate missing or not
// trusted), true when any answer came, even an error.
const reachListeners = [];
export function onReach(fn) {
  reachListeners.push(fn);
}
function reached(ok, detail) {
  for (const fn of reachListeners) fn(ok, detail);
}

export async function call(route, body) {
  let response;
  try {
    response = await fetch(route, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Corkboard-Requested-By': 'dashboard' },
      body: JSON.stringify(body || {}),
      cache: 'no-store',
    });
  } catch (err) {
    reached(false, err.message);
    throw new ApiError('Unavailable', 'the board cannot be reached: ' + err.message);
  }
  reached(true, '');
  let answer;
  try {
    answer = await response.json();
  } catch (_) {
    throw new ApiError('HTTP', `${route} answered ${response.status} without a JSON body`);
  }
  if (answer.error) throw new ApiError(answer.error.type || 'UnknownError', answer.error.message || '');
  if (!response.ok) throw new ApiError('HTTP', `${route} answered ${response.status}`);
  return answer;
}

// Lists come whole when no limit is asked for.
// The LRPs page reads scheduling infos: every field it shows, without the
// definitions, which would make the list thousands of times larger.
export const listSchedulingInfos = async () => (await call('/v1/desired_lrp_scheduling_infos/list', {})).desired_lrp_scheduling_infos || [];
export const getDesired = async (guid) => (await call('/v1/desired_lrps/get', { process_guid: guid })).desired_lrp;
export const listActual = async (guid) => (await call('/v1/actual_lrps/list', guid ? { process_guid: guid } : {})).actual_lrps || [];
export const rolloutStatus = async (guid) => (await call('/v1/rollouts/status', { process_guid: guid })).status || {};
export const listDefinitions = async (guid) => (await call('/v1/definitions/list', { process_guid: guid })).definitions || [];
export const getDefinition = async (guid, id) => (await call('/v1/definitions/get', { process_guid: guid, definition_id: id })).definition || {};
// OPERATIONS_PAGE is how many operations the LRP page reads at a time: the
// newest 20, then 20 more each time the operator asks for older ones.
export const OPERATIONS_PAGE = 20;
// listOperations reads one page of an LRP's operations, newest first, from
// cursor ('' for the newest): {operations, next_cursor}.
export const listOperations = async (guid, cursor) => {
  const request = { process_guid: guid, limit: OPERATIONS_PAGE };
  if (cursor) request.cursor = cursor;
  const answer = await call('/v1/operations/list', request);
  return { operations: answer.operations || [], next_cursor: answer.next_cursor || '' };
};
export const listFreezeWindows = async () => call('/v1/freeze_windows/list', {});
export const listCells = async () => (await call('/v1/cells/list', {})).cells || [];

// concernsLRP says which process guid an event is about, or ''.
export function eventGuid(type, payload) {
  const p = payload || {};
  const record = p.after || p.before || p.desired_lrp || p.actual_lrp || p.status || p.operation || p.health || {};
  return record.process_guid || '';
}
