// ticketd status page: reads the JSON API of the server that served it, every POLL_MS, and
// renders it. Read-only: it never sends anything but GET. Every value from the server is put
// into the page as text (never as markup): sequence names and holders are the clients'.
'use strict';

const POLL_MS = 2000;
const HISTORY = 60;             // rate samples kept per sequence (two minutes)
const MAX_LISTED = 12;          // block leases and reservations shown
const TOKEN_KEY = 'ticketd.token';

const history = new Map();      // sequence name -> [{t, count}]
let timer = null;

// --- the bearer token: asked once, kept in this tab's session storage -----------------------

function takeTokenFromFragment() {
  // /ui#token=... (for scripts and bookmarks): stored, then removed from the address bar.
  // A fragment is never sent to the server, so the token is not in any access log.
  const m = /^#token=(.+)$/.exec(location.hash);
  if (!m) return;
  sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(m[1]));
  window.history.replaceState(null, '', location.pathname);
}

class Unauthorized extends Error {}

class ApiError extends Error {
  constructor(status, body) {
    super((body && body.error && body.error.message) || `HTTP ${status}`);
    this.status = status;
    this.code = body && body.error && body.error.code;
  }
}

async function api(path) {
  const headers = { Accept: 'application/json' };
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.Authorization = 'Bearer ' + token;
  const res = await fetch(path, { headers, cache: 'no-store', credentials: 'omit' });
  let body = null;
  try { body = await res.json(); } catch (e) { body = null; }
  if (res.status === 401) throw new Unauthorized();
  if (!res.ok) throw new ApiError(res.status, body);
  return body;
}

function askForToken(rejected) {
  document.body.dataset.state = 'need-token';
  document.getElementById('status').hidden = true;
  document.getElementById('token-form').hidden = false;
  const err = document.getElementById('token-error');
  err.hidden = !rejected;
  err.textContent = rejected ? 'That token was refused.' : '';
}

// --- numbers ---------------------------------------------------------------------------

function big(s) { return s === null || s === undefined ? null : BigInt(s); }

function short(n) {
  // 9223372036854775807 -> "9.22 E"; exact below a million.
  const x = Number(n);
  if (Math.abs(x) < 1e6) return String(n);
  const units = [[1e18, 'E'], [1e15, 'P'], [1e12, 'T'], [1e9, 'G'], [1e6, 'M']];
  for (const [v, u] of units) if (Math.abs(x) >= v) return (x / v).toPrecision(3) + ' ' + u;
  return String(n);
}

function duration(seconds) {
  if (!isFinite(seconds)) return '—';
  if (seconds > 1000 * 365.25 * 86400) return 'over 1000 years';
  const units = [[365.25 * 86400, 'years'], [86400, 'days'], [3600, 'hours'], [60, 'minutes']];
  for (const [v, u] of units) if (seconds >= v) return (seconds / v).toPrecision(3) + ' ' + u;
  return Math.max(0, Math.round(seconds)) + ' s';
}

function when(iso) { return iso ? iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '—'; }

// Values left on a grid of `step` from `next` through `max`, and how many it held from
// `start`: [left, total] as BigInts.
function gridHeadroom(start, next, max, step) {
  const inc = BigInt(step);
  const total = max >= start ? (max - start) / inc + 1n : 0n;
  const left = next === null ? total : (max >= next ? (max - next) / inc + 1n : 0n);
  return [left, total];
}

// Headroom of one sequence: {percent, left (text), count (what the rate is taken from),
// seconds (time to exhaustion at `rate` per second, or a fixed end)}.
function headroom(s) {
  switch (s.kind) {
    case 'ticket': {
      const [, total] = gridHeadroom(big(s.start), big(s.next_value), big(s.max_value), s.increment);
      const left = big(s.remaining);
      return { left, total, count: Number(s.issued), unit: 'values' };
    }
    case 'gapless': {
      const [left, total] = gridHeadroom(big(s.start), big(s.next_value), big(s.max_value),
                                         s.increment);
      // Numbers reserved so far (committed, pending or voided) are what the rate counts.
      return { left, total, count: Number(total - left), unit: 'numbers' };
    }
    case 'snowflake': {
      // Time runs out, not values: 2^time_bits ticks of time_unit_ms after the epoch.
      const epoch = Date.parse(s.epoch);
      const span = Math.pow(2, s.time_bits) * s.time_unit_ms;
      const end = epoch + span;
      const leftMs = Math.max(0, end - Date.now());
      return { leftMs, spanMs: span, endsAt: new Date(end), count: Number(s.issued) };
    }
    default:  // uuidv7: no state, nothing to run out of
      return { unbounded: true, count: Number(s.issued) };
  }
}

function percentOf(left, total) {
  if (total <= 0n) return 0;
  // Four decimals of a percent without losing precision on 63-bit values.
  return Number((left * 1000000n) / total) / 10000;
}

function rate(name, count) {
  const now = performance.now();
  const samples = history.get(name) || [];
  samples.push({ t: now, count });
  while (samples.length > HISTORY + 1) samples.shift();
  history.set(name, samples);
  const rates = [];
  for (let i = 1; i < samples.length; ++i) {
    const dt = (samples[i].t - samples[i - 1].t) / 1000;
    rates.push(dt > 0 ? Math.max(0, samples[i].count - samples[i - 1].count) / dt : 0);
  }
  return rates;
}

// --- rendering ---------------------------------------------------------------------------

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v;
    else if (k.startsWith('data-')) e.setAttribute(k, v);
    else e[k] = v;
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function bar(percent) {
  const fill = el('span');
  fill.style.width = Math.max(0, Math.min(100, percent)).toFixed(2) + '%';
  const cls = percent < 5 ? 'bar critical' : percent < 20 ? 'bar low' : 'bar';
  return el('span', { class: cls, title: percent.toFixed(4) + '% left' }, fill);
}

const SVG = 'http://www.w3.org/2000/svg';  // the SVG namespace name, not a fetch

function sparkline(rates) {
  const w = 120, h = 22;
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('class', 'spark');
  svg.setAttribute('width', w);
  svg.setAttribute('height', h);
  const top = Math.max(1, ...rates);
  const points = rates.map((r, i) => {
    // The samples so far fill the width; after two minutes it is a sliding window.
    const x = rates.length > 1 ? (i * w) / (rates.length - 1) : 0;
    const y = h - 1 - (r / top) * (h - 2);
    return x.toFixed(1) + ',' + y.toFixed(1);
  });
  const line = document.createElementNS(SVG, 'polyline');
  line.setAttribute('points', points.join(' '));
  svg.append(line);
  return svg;
}

function replaceRows(tableId, rows, emptyText, columns) {
  const body = document.querySelector('#' + tableId + ' tbody');
  body.replaceChildren(...rows);
  if (rows.length === 0) body.append(el('tr', {}, el('td', { class: 'empty', colSpan: columns }, emptyText)));
}

function sequenceRow(s) {
  const h = headroom(s);
  const rates = rate(s.name, h.count);
  const current = rates.length ? rates[rates.length - 1] : 0;
  let percent, left, exhaustion;
  if (h.unbounded) {
    percent = 100;
    left = 'no limit (stateless)';
    exhaustion = 'never';
  } else if (h.spanMs !== undefined) {
    percent = (h.leftMs / h.spanMs) * 100;
    left = duration(h.leftMs / 1000) + ' of time bits';
    exhaustion = when(h.endsAt.toISOString());
  } else {
    percent = percentOf(h.left, h.total);
    left = short(h.left) + ' ' + h.unit + ' left';
    exhaustion = h.left === 0n ? 'exhausted'
      : current > 0 ? 'in ' + duration(Number(h.left) / current) : 'not at this rate';
  }
  const next = s.kind === 'ticket' || s.kind === 'gapless' ? short(big(s.next_value)) : '—';
  const kind = el('td', {}, s.kind);
  if (s.exhausted) kind.append(' ', el('span', { class: 'badge exhausted' }, 'exhausted'));
  return el('tr', {
    'data-sequence': s.name,
    'data-kind': s.kind,
    'data-headroom': percent.toFixed(4),
    'data-rate': current.toFixed(1),
    'data-count': String(h.count),
  },
  el('td', {}, s.name), kind, el('td', { class: 'num' }, next),
  el('td', {}, bar(percent), left),
  el('td', {}, sparkline(rates), Math.round(current).toLocaleString('en-US')),
  el('td', {}, exhaustion));
}

// GET /v1/cluster names an instance by its front ends' addresses.
function instanceText(a) {
  const parts = [];
  if (a.http) parts.push('HTTP ' + a.http);
  if (a.mysql) parts.push('MySQL ' + a.mysql);
  return parts.join(', ');
}

function renderHa(cluster) {
  const ha = document.getElementById('ha');
  ha.className = 'badge ' + cluster.role;
  let text = cluster.role;
  if (cluster.term) text += ' · term ' + cluster.term;
  if (cluster.role !== 'leader' && cluster.leader) text += ' · leader ' + instanceText(cluster.leader);
  ha.textContent = text;
  document.body.dataset.role = cluster.role;
}

async function optional(path, fallback) {
  try { return await api(path); } catch (e) {
    if (e instanceof Unauthorized) throw e;
    return fallback;
  }
}

async function refresh() {
  const cluster = await api('/v1/cluster');
  renderHa(cluster);
  let list;
  try {
    list = await api('/v1/sequences');
  } catch (e) {
    if (e instanceof ApiError && e.code === 'not_leader') {
      showNotice('This instance is a standby; the leader' +
                 (cluster.leader ? ' is ' + instanceText(cluster.leader) : ' is not known yet') +
                 '. Open its status page for the sequences.');
      document.body.dataset.state = 'standby';
      return;
    }
    throw e;
  }
  const sequences = list.sequences;
  const tickets = sequences.filter((s) => s.kind === 'ticket');
  const gapless = sequences.filter((s) => s.kind === 'gapless');
  const seg = (n) => encodeURIComponent(n);
  const [blocks, audits, pools] = await Promise.all([
    Promise.all(tickets.map((s) => optional(`/v1/sequences/${seg(s.name)}/blocks?limit=${MAX_LISTED}`,
                                            { leases: [] }))),
    Promise.all(gapless.map((s) => optional(`/v1/sequences/${seg(s.name)}/audit`, { pending: [] }))),
    optional('/v1/workers', { pools: [] }),
  ]);

  replaceRows('sequences', sequences.map(sequenceRow), 'no sequences', 6);

  const leases = blocks.flatMap((b) => b.leases)
    .sort((a, b) => b.granted_at.localeCompare(a.granted_at) || b.lease_id.localeCompare(a.lease_id))
    .slice(0, MAX_LISTED);
  replaceRows('blocks', leases.map((l) => el('tr', { 'data-lease': l.lease_id },
    el('td', {}, l.sequence), el('td', { class: 'num' }, l.first), el('td', { class: 'num' }, l.last),
    el('td', { class: 'num' }, l.count), el('td', {}, l.holder), el('td', {}, when(l.granted_at)))),
  'no block leases', 6);

  const pending = audits.flatMap((a) => a.pending.map((p) => Object.assign({ sequence: a.sequence }, p)));
  const shown = pending.slice(0, MAX_LISTED).map((p) => el('tr', { 'data-reservation': p.reservation_id },
    el('td', {}, p.sequence), el('td', { class: 'num' }, p.id), el('td', {}, p.holder),
    el('td', {}, p.state), el('td', {}, when(p.expires_at))));
  if (pending.length > MAX_LISTED) {
    shown.push(el('tr', {}, el('td', { class: 'empty', colSpan: 5 },
                               `and ${pending.length - MAX_LISTED} more`)));
  }
  replaceRows('reservations', shown, 'none pending', 5);

  replaceRows('pools', pools.pools.map((p) => el('tr', { 'data-pool': p.pool, 'data-leased': p.leased },
    el('td', {}, p.pool), el('td', { class: 'num' }, `${p.leased} / ${p.size}`),
    el('td', {}, bar(100 - (100 * p.leased) / p.size), `${p.size - p.leased} free`),
    el('td', {}, p.leases.slice(0, 8).map((l) => `${l.worker_id}: ${l.holder}`).join(', ') +
                 (p.leases.length > 8 ? ` and ${p.leases.length - 8} more` : '')))),
  'no worker pools', 4);

  hideNotice();
  document.getElementById('token-form').hidden = true;
  document.getElementById('status').hidden = false;
  document.body.dataset.state = 'ready';
  document.getElementById('updated').textContent = 'updated ' + new Date().toLocaleTimeString('en-GB');
}

function showNotice(text) {
  const n = document.getElementById('notice');
  n.textContent = text;
  n.hidden = false;
}

function hideNotice() { document.getElementById('notice').hidden = true; }

async function tick() {
  clearTimeout(timer);
  try {
    await refresh();
  } catch (e) {
    if (e instanceof Unauthorized) {
      askForToken(sessionStorage.getItem(TOKEN_KEY) !== null);
      sessionStorage.removeItem(TOKEN_KEY);
      return;  // polling resumes once a token is given
    }
    showNotice('Cannot read the status: ' + e.message);
    document.body.dataset.state = 'error';
  }
  timer = setTimeout(tick, POLL_MS);
}

document.addEventListener('DOMContentLoaded', () => {
  document.getElementById('instance').textContent = location.host;
  takeTokenFromFragment();
  document.getElementById('token-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const input = document.getElementById('token');
    sessionStorage.setItem(TOKEN_KEY, input.value);
    input.value = '';
    document.getElementById('token-form').hidden = true;
    tick();
  });
  tick();
});
