// cvhost's live view: the picture of /stream.mjpg with the results of /events drawn over it.
// Plain JavaScript served as it is (no build step, nothing from elsewhere).
//
// Pictures and results meet by frame: every MJPEG part carries X-Sequence (the lines' `seq`),
// X-Pts and the frame's size, so the stream is read with fetch() and split here rather than
// shown by an <img> pointed at it. A frame is drawn with each plugin's results of the newest
// frame up to it (at most half a second older), redrawn as late results arrive.
'use strict';

const params = new URLSearchParams(location.search);
const token = params.get('token');
const STALE_SECONDS = 0.5;
const HISTORY = 240;

const $ = (id) => document.getElementById(id);
const svgNS = 'http://www.w3.org/2000/svg';

/** A route's address, with the page's token when it has one (what a browser loads by URL). */
function url(path, query = {}) {
  const q = new URLSearchParams(query);
  if (token) q.set('token', token);
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

function authHeaders() {
  return token ? { Authorization: `Bearer ${token}` } : {};
}

// What the page knows, per input (source id).
const inputs = new Map();

function input(source) {
  if (!inputs.has(source)) {
    inputs.set(source, { started: null, state: 'starting', metrics: new Map(), history: new Map(), counts: new Map() });
    const option = document.createElement('option');
    option.value = option.textContent = source;
    $('source').append(option);
    if (!current && (!wanted || source === wanted)) select(source);
  }
  return inputs.get(source);
}

// ?source=NAME shows that input first (the site's page links so); another if it does not come.
const wanted = params.get('source');
if (wanted) setTimeout(() => { if (!current && inputs.size) select(inputs.keys().next().value); }, 3000);

let current = null;      // the source shown
let frame = null;        // the picture shown: {seq, pts, width, height}
let streamAbort = null;

function select(source) {
  current = source;
  $('source').value = source;
  frame = null;
  startStream(source);
  loadControls();
  drawPanel();
  loadHistory();
}

$('source').addEventListener('change', (e) => select(e.target.value));

// ---- The picture ----

async function startStream(source) {
  if (streamAbort) streamAbort.abort();
  const abort = new AbortController();
  streamAbort = abort;
  $('snapshot-link').href = url('snapshot.jpg', { source });
  for (;;) {
    try {
      const response = await fetch(url('stream.mjpg', { source }), { signal: abort.signal, headers: authHeaders() });
      if (!response.ok) throw new Error(`stream.mjpg: HTTP ${response.status}`);
      await readParts(response.body.getReader(), showPicture);
    } catch (e) {
      if (abort.signal.aborted) return;
    }
    await new Promise((r) => setTimeout(r, 1000));  // cvhost restarted, or the network blinked
    if (abort.signal.aborted) return;
  }
}

const CRLFCRLF = [13, 10, 13, 10];

function indexOf(bytes, pattern, from = 0) {
  outer: for (let i = from; i <= bytes.length - pattern.length; i++) {
    for (let j = 0; j < pattern.length; j++) if (bytes[i + j] !== pattern[j]) continue outer;
    return i;
  }
  return -1;
}

/** Splits multipart/x-mixed-replace into parts: headers (lower-case names) and body. */
async function readParts(reader, onPart) {
  let buffer = new Uint8Array(0);
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    const joined = new Uint8Array(buffer.length + value.length);
    joined.set(buffer);
    joined.set(value, buffer.length);
    buffer = joined;
    for (;;) {
      const end = indexOf(buffer, CRLFCRLF);
      if (end < 0) break;
      const headers = {};
      for (const line of new TextDecoder().decode(buffer.subarray(0, end)).split('\r\n')) {
        const colon = line.indexOf(':');
        if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      const length = Number(headers['content-length']);
      const start = end + 4;
      if (!(length >= 0)) { buffer = buffer.slice(start); continue; }
      if (buffer.length < start + length + 2) break;
      onPart(headers, buffer.slice(start, start + length));
      buffer = buffer.slice(start + length + 2);
    }
  }
}

let shownURL = null;

function showPicture(headers, jpeg) {
  const picture = $('picture');
  const next = URL.createObjectURL(new Blob([jpeg], { type: 'image/jpeg' }));
  const info = {
    seq: Number(headers['x-sequence']),
    pts: Number(headers['x-pts']),
    width: Number(headers['x-frame-width']),
    height: Number(headers['x-frame-height']),
    // Where it moved (--motion): "x,y,w,h;..." in its pixels; absent when motion is not looked for.
    motion: headers['x-motion'] === undefined ? null
      : headers['x-motion'].split(';').filter(Boolean).map((b) => b.split(',').map(Number)),
  };
  picture.onload = () => {
    if (shownURL) URL.revokeObjectURL(shownURL);
    shownURL = next;
    frame = info;
    drawOverlay();
  };
  picture.src = next;
}

// ---- Results over the picture ----

/** A plugin's point, in its own frame, back to the input's frame: undo its rotation, then its mirror. */
function toFrame(plugin, [u, v]) {
  const W = frame.width, H = frame.height;
  let x = u, y = v;
  switch (plugin.rotate) {
    case 90: x = v; y = H - u; break;
    case 180: x = W - u; y = H - v; break;
    case 270: x = W - v; y = u; break;
  }
  if (plugin.mirror) x = W - x;
  return [x, y];
}

function el(name, attributes, text) {
  const e = document.createElementNS(svgNS, name);
  for (const [k, v] of Object.entries(attributes)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function drawOverlay() {
  const svg = $('overlay');
  svg.replaceChildren();
  const inp = inputs.get(current);
  if (!frame || !inp) return;
  svg.setAttribute('viewBox', `0 0 ${frame.width} ${frame.height}`);
  $('caption').textContent = `${current} · frame ${frame.seq} · ${frame.pts.toFixed(2)} s · ${frame.width}x${frame.height}`;
  const plugins = inp.started ? inp.started.plugins : [];
  drawDrawing(svg);
  for (const [x, y, width, height] of frame.motion || []) {
    svg.append(el('rect', { class: 'motion-box', x, y, width, height }));
  }
  for (const plugin of plugins) {
    drawROI(svg, plugin);
    drawAnalytics(svg, plugin, inp);
    const key = plugin.plugin_index;
    const history = inp.history.get(key);
    if (!history) continue;
    // The newest frame with results up to the one shown, if it is recent enough.
    let best = null;
    for (const [seq, entry] of history) {
      if (seq <= frame.seq && (!best || seq > best.seq)) best = { seq, ...entry };
    }
    if (!best || frame.pts - best.pts > STALE_SECONDS) continue;
    for (const r of best.results) drawResult(svg, plugin, r);
  }
}

function drawROI(svg, plugin) {
  const roi = plugin.options && plugin.options.roi;
  if (!roi) return;
  const [x, y, w, h] = roi.split(':').map(Number);
  if ([x, y, w, h].some(Number.isNaN) || (x === 0 && y === 0 && w === 1 && h === 1)) return;
  svg.append(el('rect', {
    class: 'roi', 'data-plugin': plugin.plugin,
    x: x * frame.width, y: y * frame.height, width: w * frame.width, height: h * frame.height,
  }));
  svg.append(el('text', { x: x * frame.width + 4, y: y * frame.height + 18 }, `${plugin.plugin} roi`));
}

// Where a label goes: above its box or code, moved up (or below) until it crosses no label or
// code already drawn in this picture, so that one's text never runs across another's (two
// detections of one object, a crowd).
function placeLabel(svg, x, y, text) {
  const size = Math.max(12, frame.height / 40);       // the overlay's font size, roughly (view.css)
  const width = text.length * size * 0.6, height = size * 1.2;
  const taken = [...svg.querySelectorAll('text, polygon')].map((e) => e.getBBox());
  const free = (ty) => taken.every((b) => x + width < b.x || x > b.x + b.width || ty < b.y || ty - height > b.y + b.height);
  for (let step = 0; step < 12; step++) {
    for (const ty of [y - step * height, y + step * height]) if (ty >= height && ty <= frame.height && free(ty)) return [x, ty];
  }
  return [x, y];
}

// "person #12 87%": its track (--track), its score, and a second stage's label after it.
function objectLabel(d) {
  const score = typeof d.confidence === 'number' ? ` ${Math.round(d.confidence * 100)}%` : '';
  const track = typeof d.track_id === 'number' ? ` #${d.track_id}` : '';
  return `${d.label}${track}${score}${d.classification && d.classification.label ? ' · ' + d.classification.label : ''}`;
}

// The zones and lines a tracked plugin's tracks are watched in (session.started's analytics), with
// what they count (the latest zone.occupancy and line.crossed of each): "bay 2", "door in 3 · out 1".
function drawAnalytics(svg, plugin, inp) {
  const a = plugin.analytics;
  if (!a) return;
  // In the plugin's frame (turned as it asks: fractions of its sides), then on the picture as results are.
  const turned = plugin.rotate === 90 || plugin.rotate === 270;
  const [w, h] = turned ? [frame.height, frame.width] : [frame.width, frame.height];
  const place = (shape) => shape.points.map(([x, y]) => toFrame(plugin, shape.units === 'fractions' ? [x * w, y * h] : [x, y]));
  for (const m of a.masks || []) {
    const points = place(m);
    svg.append(el('polygon', { class: 'mask', 'data-mask': m.name, points: points.map((p) => p.join(',')).join(' ') }));
    svg.append(el('text', { class: 'mask-label', x: points[0][0] + 6, y: points[0][1] + 18 }, `${m.name} (ignored)`));
  }
  for (const z of a.zones) {
    const points = place(z);
    svg.append(el('polygon', { class: 'zone', 'data-zone': z.name, points: points.map((p) => p.join(',')).join(' ') }));
    svg.append(el('text', { class: 'zone-label', x: points[0][0] + 6, y: points[0][1] + 22 }, `${z.name} ${zoneInside(inp, plugin, z.name)}`));
  }
  for (const l of a.lines) {
    const [p, q] = place(l);
    svg.append(el('line', { class: 'count-line', 'data-line': l.name, x1: p[0], y1: p[1], x2: q[0], y2: q[1] }));
    const c = lineTotals(inp, plugin, l.name);
    svg.append(el('text', { class: 'line-label', x: (p[0] + q[0]) / 2 + 6, y: Math.max(20, (p[1] + q[1]) / 2) },
      `${l.name} in ${c.in} · out ${c.out}`));
  }
}

function drawResult(svg, plugin, r) {
  const d = r.data || {};
  if ((r.type === 'barcode' || r.type === 'barcode.update') && Array.isArray(d.corners)) {
    const points = d.corners.map((p) => toFrame(plugin, p));
    svg.append(el('polygon', {
      class: 'code', 'data-plugin': plugin.plugin, 'data-seq': r.seq,
      points: points.map((p) => p.join(',')).join(' '),
    }));
    const top = points.reduce((a, b) => (b[1] < a[1] ? b : a));
    const label = `${d.symbology}: ${d.text === null ? '(binary)' : d.text}`;
    const text = label.length > 48 ? label.slice(0, 47) + '…' : label;
    const [x, y] = placeLabel(svg, top[0], Math.max(18, top[1] - 12), text);
    svg.append(el('text', { x, y }, text));
  } else if (r.type === 'face' && d.bounds) {
    const b = d.bounds;
    const corners = [[b.x, b.y], [b.x + b.width, b.y + b.height]].map((p) => toFrame(plugin, p));
    const x = Math.min(corners[0][0], corners[1][0]), y = Math.min(corners[0][1], corners[1][1]);
    svg.append(el('rect', {
      class: 'face', 'data-plugin': plugin.plugin, 'data-seq': r.seq,
      x, y, width: Math.abs(corners[1][0] - corners[0][0]), height: Math.abs(corners[1][1] - corners[0][1]),
    }));
    // The CNN's five points (eyes, nose tip, mouth corners), when the detector gives them.
    for (const p of Object.values(d.landmarks || {})) {
      const [cx, cy] = toFrame(plugin, [p.x, p.y]);
      svg.append(el('circle', { class: 'landmark', 'data-plugin': plugin.plugin, cx, cy, r: 3 }));
    }
    const angles = [d.has_roll ? `roll ${Math.round(d.roll_angle)}°` : null, d.has_yaw ? `yaw ${Math.round(d.yaw_angle)}°` : null]
      .filter(Boolean).join(' ');
    // One id a face: its track's (--track face) when it has one, else the plugin's own face_id.
    const id = typeof d.track_id === 'number' ? `#${d.track_id}` : `${d.face_id}`;
    const text = `face ${id}${angles ? ' · ' + angles : ''}`;
    const [tx, ty] = placeLabel(svg, x, Math.max(18, y - 12), text);
    svg.append(el('text', { x: tx, y: ty }, text));
  } else if (r.type === 'object' && d.bounds && typeof d.label === 'string') {
    // Any plugin's object with a box and a label (the detect plugin's), with its score.
    const b = d.bounds;
    const corners = [[b.x, b.y], [b.x + b.width, b.y + b.height]].map((p) => toFrame(plugin, p));
    const x = Math.min(corners[0][0], corners[1][0]), y = Math.min(corners[0][1], corners[1][1]);
    svg.append(el('rect', {
      class: 'object', 'data-plugin': plugin.plugin, 'data-seq': r.seq,
      x, y, width: Math.abs(corners[1][0] - corners[0][0]), height: Math.abs(corners[1][1] - corners[0][1]),
    }));
    const text = objectLabel(d);
    const [tx, ty] = placeLabel(svg, x, Math.max(18, y - 12), text);
    svg.append(el('text', { x: tx, y: ty }, text));
  } else if (r.type === 'motion' && d.motion) {
    svg.append(el('text', { class: 'motion', 'data-plugin': plugin.plugin, x: 8, y: frame.height - 10 },
      `motion ${(d.changed_fraction * 100).toFixed(1)}%`));
  }
}

// ---- Events ----

function onLine(line) {
  // Tracks, zones and lines changed while running (this page's drawing, or anyone's): read them anew.
  if (line.event === 'analytics.changed') { analyticsChanged(line); return; }
  if (line.source === null || line.source === undefined) return;
  if (line.event === 'input.removed') { removeInput(line.source); return; }
  const inp = input(line.source);
  switch (line.event) {
    case 'session.started':
      inp.started = line;
      inp.state = 'running';
      inp.history.clear();
      inp.metrics.clear();
      inp.counts.clear();
      // Its zones and lines as they are now (changed since it started, perhaps): read once the lines replayed settle.
      clearTimeout(analyticsTimer);
      analyticsTimer = setTimeout(loadAnalytics, 300);
      break;
    case 'session.interrupted': inp.state = 'interrupted'; break;
    case 'session.interruption_ended': inp.state = 'running'; break;
    case 'session.error': inp.state = 'error'; break;
    case 'session.stopped': inp.state = `stopped (${line.reason})`; break;
    case 'metrics': inp.metrics.set(line.plugin_index, line); break;
    case 'line.crossed':
      inp.counts.set(`${line.plugin_index}/line/${line.data.line}/${line.data.label}`, line.data);
      if (line.source === current) drawOverlay();
      break;
    case 'zone.occupancy':
      inp.counts.set(`${line.plugin_index}/zone/${line.data.zone}/${line.data.label}`, line.data);
      if (line.source === current) drawOverlay();
      break;
    case 'result': {
      let history = inp.history.get(line.plugin_index);
      if (!history) inp.history.set(line.plugin_index, history = new Map());
      if (line.seq !== null) {
        if (!history.has(line.seq)) history.set(line.seq, { pts: line.pts, results: [] });
        history.get(line.seq).results.push(line);
        while (history.size > HISTORY) history.delete(history.keys().next().value);
      }
      addResultLine(line);
      if (line.source === current && frame && line.seq <= frame.seq) drawOverlay();
      break;
    }
  }
  if (line.snapshot || line.event === 'clip.saved') addEvidence(line);
  if (line.source === current && HISTORY_EVENTS.has(line.event)) historySoon();
  if (line.source === current && line.event !== 'result') drawPanel();
}

// The latest events' snapshots (a thumbnail, linked to the picture) and clips (a link), newest
// first: the files as the server serves them (/snapshots/NAME, /clips/NAME), not their paths.
// Those kept before the page opened come from GET /snapshots and /clips; the rest as they are said.
const EVIDENCE_SHOWN = 12;

function addEvidence(line) {
  if (line.event === 'clip.saved') {
    showEvidence('clip', line.data.file, `${line.source} ${line.data.seconds.toFixed(1)} s, ${line.data.events.length} event${line.data.events.length === 1 ? '' : 's'}`);
  } else {
    showEvidence('snapshot', line.snapshot.split('/').pop(), `${line.source} #${line.seq} ${line.event}${line.data && line.data.label ? ' ' + line.data.label : ''}`);
  }
}

const evidenceShown = new Set();

function showEvidence(kind, file, text, atEnd = false) {
  // Once each (a file listed at load may come again as an event the server replays).
  if (evidenceShown.has(file)) return;
  evidenceShown.add(file);
  const li = document.createElement('li');
  const link = el2('a', { href: url(`${kind}s/${file}`) }, kind === 'clip' ? 'clip' : undefined);
  if (kind === 'snapshot') link.append(el2('img', { class: 'thumb', src: url(`snapshots/${file}`), alt: text, loading: 'lazy' }));
  li.append(link, ` ${text}`);
  $('evidence-title').hidden = false;
  const list = $('evidence');
  if (atEnd) list.append(li); else list.prepend(li);
  while (list.children.length > EVIDENCE_SHOWN) list.lastChild.remove();
}

async function loadEvidence() {
  const kept = [];
  for (const kind of ['clips', 'snapshots']) {
    try {
      const response = await fetch(url(kind, { limit: EVIDENCE_SHOWN }), { headers: authHeaders() });
      if (!response.ok) continue;  // 404: this run keeps none of them
      for (const f of (await response.json())[kind]) kept.push({ kind: kind.slice(0, -1), ...f });
    } catch (e) { /* the list waits for the next page load */ }
  }
  kept.sort((a, b) => b.made - a.made);
  for (const f of kept.slice(0, EVIDENCE_SHOWN)) showEvidence(f.kind, f.file, `${f.source} ${f.event}`, true);
}

// The events the run keeps (--events-db, GET /history): the shown input's, newest first, a page
// at a time, each with its snapshot (a thumbnail) and its clip opened at the event's moment
// (#t=SECONDS, where in the clip the event is). A new event of the input reloads the first page.
const HISTORY_EVENTS = new Set(['line.crossed', 'zone.entered', 'zone.exited', 'zone.dwell', 'track.ended', 'clip.saved',
  'session.started', 'session.stopped', 'session.interrupted', 'session.interruption_ended', 'input.added', 'input.removed']);
const HISTORY_PAGE = 20;
let historyBefore = null;
let historyTimer = null;

async function loadHistory(more = false) {
  if (!current) return;
  const query = { source: current, limit: HISTORY_PAGE };
  if ($('history-event').value) query.event = $('history-event').value;
  if (more && historyBefore !== null) query.before = historyBefore;
  let answer;
  try {
    const response = await fetch(url('history', query), { headers: authHeaders() });
    if (!response.ok) return;  // 404: this run keeps no events
    answer = await response.json();
  } catch (e) { return; }
  $('history-title').hidden = false;
  $('history-filters').hidden = false;
  const list = $('history');
  if (!more) list.replaceChildren();
  for (const row of answer.events) list.append(historyItem(row));
  historyBefore = answer.next_before;
  $('history-more').disabled = historyBefore === null;
}

function historySoon() {
  clearTimeout(historyTimer);
  historyTimer = setTimeout(() => loadHistory(), 1000);
}

function historyItem(row) {
  const line = row.line, d = line.data || {};
  const li = el2('li', { 'data-id': row.id, 'data-event': line.event });
  const what = [line.event, d.line || d.zone, d.direction, d.label, d.track_id === undefined ? null : `track ${d.track_id}`]
    .filter((x) => x !== undefined && x !== null).join(' ');
  if (row.snapshot && row.snapshot.exists) {
    const file = row.snapshot.path.split('/').pop();
    const a = el2('a', { href: url(`snapshots/${file}`), class: 'history-snapshot' });
    a.append(el2('img', { class: 'thumb', src: url(`snapshots/${file}`), alt: what, loading: 'lazy' }));
    li.append(a, ' ');
  }
  li.append(`${new Date(line.ts * 1000).toLocaleString()} ${what}`);
  if (row.clip && row.clip.exists) {
    const offset = (row.clip.offset || 0).toFixed(1);
    li.append(' ', el2('a', { href: `${url(`clips/${row.clip.path.split('/').pop()}`)}#t=${offset}`, class: 'history-clip' }, `clip at ${offset} s`));
  } else if (row.snapshot && !row.snapshot.exists) {
    li.append(' (its snapshot is no longer kept)');
  }
  return li;
}

$('history-event').addEventListener('change', () => loadHistory());
$('history-more').addEventListener('click', () => loadHistory(true));

/** An HTML element with attributes and text. */
function el2(name, attributes, text) {
  const e = document.createElement(name);
  for (const [k, v] of Object.entries(attributes)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function addResultLine(line) {
  if (line.source !== current) return;
  const d = line.data || {};
  const what = d.text !== undefined ? `${d.symbology}: ${d.text}` : d.face_id !== undefined ? `face ${d.face_id}` :
    line.type === 'object' && typeof d.label === 'string' ? objectLabel(d) :
    d.motion !== undefined ? (d.started ? 'motion started' : d.stopped ? 'motion stopped' : `motion ${d.motion}`) :
    JSON.stringify(d).slice(0, 60);
  // The plugin's name once; the result's type only where it says more than the name (barcode.lost).
  const type = line.type === line.plugin || what.startsWith(line.type) ? '' : ` ${line.type}`;
  const li = document.createElement('li');
  li.textContent = `#${line.seq} ${line.plugin}${type}: ${what}`;
  const list = $('results');
  list.prepend(li);
  while (list.children.length > 30) list.lastChild.remove();
}

function connectEvents() {
  const source = new EventSource(url('events'));
  source.onmessage = (e) => {
    try { onLine(JSON.parse(e.data)); } catch (err) { console.warn('bad line', err); }
  };
  source.onerror = () => {
    if (tokenRefused) { source.close(); return; } // the page says why, once
    $('state').textContent = 'reconnecting…';
    $('state').className = 'state error';
  };
}

// ---- The panel: each plugin's metrics and its pause button ----

const fmt = (v, digits = 1) => (v === null || v === undefined ? '–' : Number(v).toFixed(digits));

function drawPanel() {
  const inp = inputs.get(current);
  if (!inp) return;
  $('state').textContent = inp.state;
  $('state').className = `state ${inp.state.split(' ')[0]}`;
  const body = $('plugins').tBodies[0];
  body.replaceChildren();
  for (const plugin of inp.started ? inp.started.plugins : []) {
    const m = inp.metrics.get(plugin.plugin_index);
    // Counts and fps from /metrics (every 2 s, whatever --metrics-interval is); latency from the metrics lines.
    const live = liveCounts.get(`${current}\u0000${plugin.plugin_index}`);
    const row = body.insertRow();
    row.dataset.plugin = plugin.plugin;
    const cells = [plugin.plugin, fmt(live ? live.fps : m && m.fps), live ? live.processed : m ? m.frames.processed : '–',
      live ? live.dropped : m ? m.frames.dropped_total : '–',
      m && m.latency_ms.p50 !== null ? `${fmt(m.latency_ms.p50)} / ${fmt(m.latency_ms.p99)} ms` : '–'];
    cells.forEach((text, i) => {
      const cell = row.insertCell();
      cell.textContent = text;
      if (i > 0) cell.className = 'num';
    });
    const button = document.createElement('button');
    const enabled = pluginEnabled.get(`${current}\u0000${plugin.plugin_index}`) !== false;
    button.textContent = enabled ? 'pause' : 'resume';
    button.onclick = () => send({ plugin: plugin.plugin, plugin_index: plugin.plugin_index, source: current, enabled: !enabled });
    row.insertCell().append(button);
  }
  drawCounts(inp);
}

// What each zone and line counts, as text ("door: in 3 · out 1", "bay: 2 inside"), beside the
// picture, each with its buttons: drawn again (moved) or deleted.
function drawCounts(inp) {
  const list = $('counts');
  list.replaceChildren();
  const listed = new Set();
  for (const plugin of inp.started ? inp.started.plugins : []) {
    const a = plugin.analytics;
    if (!a) continue;
    for (const z of a.zones) {
      if (!listed.has(`zone/${z.name}`)) list.append(countItem('zone', z.name, `${z.name}: ${zoneInside(inp, plugin, z.name)} inside`));
      listed.add(`zone/${z.name}`);
    }
    for (const l of a.lines) {
      const c = lineTotals(inp, plugin, l.name);
      if (!listed.has(`line/${l.name}`)) list.append(countItem('line', l.name, `${l.name}: in ${c.in} · out ${c.out}`));
      listed.add(`line/${l.name}`);
    }
  }
  $('counts-title').hidden = list.children.length === 0;
}

function countItem(kind, name, text) {
  const li = document.createElement('li');
  li.append(text);
  const redraw = el2('button', { 'data-redraw': `${kind}/${name}` }, 'move');
  redraw.onclick = () => startDrawing(kind, name);
  const remove = el2('button', { 'data-delete': `${kind}/${name}` }, 'delete');
  remove.onclick = () => change('DELETE', `${kind}s/${encodeURIComponent(name)}`);
  li.append(redraw, remove);
  return li;
}

// ---- Tracks, zones and lines changed while running (GET /analytics) ----

async function analyticsChanged(line) {
  // A zone moved, or a line turned round, counts anew: its old counts are not shown.
  if (line.counts === 'reset' || line.change === 'removed') {
    for (const inp of inputs.values()) {
      for (const key of [...inp.counts.keys()]) if (key.includes(`/${line.kind}/${line.name}/`)) inp.counts.delete(key);
    }
  }
  await loadAnalytics();
}

let analyticsTimer = null;

async function loadAnalytics() {
  try {
    const response = await fetch(url('analytics'), { headers: authHeaders() });
    if (!response.ok) return;
    const a = (await response.json()).result;
    // In the shape session.started has (one shape: points as [x, y]), only those of each input.
    const tracked = new Set(a.tracks.map((t) => t.plugin));
    for (const [source, inp] of inputs) {
      for (const plugin of inp.started ? inp.started.plugins : []) {
        if (!tracked.has(plugin.plugin)) { delete plugin.analytics; continue; }
        const mine = (s) => !s.input || s.input === source;
        plugin.analytics = { zones: a.zones.filter(mine), lines: a.lines.filter(mine), masks: (a.masks || []).filter(mine) };
      }
    }
    // What each line and zone has counted now (kept from a run before, with --state; set back by a reset).
    for (const c of a.counts || []) {
      const inp = inputs.get(c.source);
      for (const plugin of inp && inp.started ? inp.started.plugins.filter((p) => p.plugin === c.plugin) : []) {
        for (const [name, l] of Object.entries(c.lines)) {
          for (const [label, v] of Object.entries(l.labels)) inp.counts.set(`${plugin.plugin_index}/line/${name}/${label}`, { in: v.in, out: v.out });
        }
        for (const [name, z] of Object.entries(c.zones)) {
          for (const [label, v] of Object.entries(z.labels)) inp.counts.set(`${plugin.plugin_index}/zone/${name}/${label}`, { count: v.occupancy });
        }
      }
    }
    drawOverlay();
    drawPanel();
  } catch (e) {
    console.warn('analytics', e);
  }
}

function removeInput(source) {
  inputs.delete(source);
  for (const option of [...$('source').options]) if (option.value === source) option.remove();
  if (current === source) {
    current = null;
    const next = inputs.keys().next();
    if (!next.done) select(next.value);
  }
}

// ---- Drawing a line or a zone on the picture ----

let drawing = null;   // {kind: 'line' | 'zone', points: [[x, y]] in the frame's pixels, closed}

function startDrawing(kind, name = '') {
  drawing = { kind, points: [], closed: false };
  if (name) $('draw-name').value = name;
  $('overlay').classList.add('drawing');
  $('draw-cancel').hidden = false;
  showDrawing();
}

function stopDrawing() {
  drawing = null;
  $('overlay').classList.remove('drawing');
  $('draw-cancel').hidden = true;
  showDrawing();
}

/** Where a click is, in the frame's pixels (the overlay's viewBox is the frame). */
function framePoint(e) {
  const m = $('overlay').getScreenCTM().inverse();
  const p = new DOMPoint(e.clientX, e.clientY).matrixTransform(m);
  return [Math.round(Math.min(Math.max(p.x, 0), frame.width)), Math.round(Math.min(Math.max(p.y, 0), frame.height))];
}

$('overlay').addEventListener('click', (e) => {
  if (!drawing || !frame) return;
  const p = framePoint(e);
  const d = drawing;
  if (d.kind === 'line' && d.points.length < 2) d.points.push(p);
  if (d.kind === 'zone' && !d.closed) {
    // A click near the first point (12 screen pixels) closes the zone.
    const scale = $('overlay').getScreenCTM().a;
    const first = d.points[0];
    if (d.points.length >= 3 && Math.hypot(p[0] - first[0], p[1] - first[1]) * scale < 12) d.closed = true;
    else d.points.push(p);
  }
  showDrawing();
  drawOverlay();
});

function drawingDone() {
  return drawing && (drawing.kind === 'line' ? drawing.points.length === 2 : drawing.closed);
}

/** The points so far (in the frame's pixels), what to do next, and whether it can be saved. */
function showDrawing() {
  const d = drawing;
  $('draw-points').textContent = d ? d.points.map((p) => p.join(',')).join(' ') : '';
  $('draw-save').disabled = !drawingDone();
  $('draw-hint').textContent = !d ? 'a line counts tracks crossing it, a zone those inside (they follow a tracked plugin\'s boxes: --track)'
    : drawingDone() ? `name it and save: it counts on ${current} from its next frame`
    : d.kind === 'line' ? `click the line's ${d.points.length ? 'second' : 'first'} point on the picture`
    : d.points.length < 3 ? 'click the zone\'s points on the picture' : 'click more points, or its first point to close it';
}

function drawDrawing(svg) {
  const d = drawing;
  if (!d || !d.points.length) return;
  const points = d.points.map((p) => p.join(',')).join(' ');
  svg.append(el(d.kind === 'zone' && d.closed ? 'polygon' : 'polyline', { class: 'drawn', points }));
  for (const [cx, cy] of d.points) svg.append(el('circle', { class: 'drawn-point', cx, cy, r: 5 }));
}

async function saveDrawing() {
  const name = $('draw-name').value.trim();
  if (!/^[a-z0-9_-]+$/.test(name)) { $('draw-hint').textContent = 'a name of a-z, 0-9, _ and - (door, bay-2)'; return; }
  // Once: a second click while it is being saved sends nothing more.
  $('draw-save').disabled = true;
  const ok = await change('PUT', `${drawing.kind}s/${encodeURIComponent(name)}`, { points: drawing.points, input: current });
  if (ok) {
    stopDrawing();
    $('draw-name').value = '';
  } else {
    $('draw-save').disabled = !drawingDone();
  }
}

/** A change of the analytics (PUT or DELETE): true when done; else the hint says why. */
async function change(method, path, body) {
  const response = await fetch(url(path), {
    method, headers: { 'Content-Type': 'application/json', ...authHeaders() }, body: body ? JSON.stringify(body) : undefined,
  });
  const answer = await response.json().catch(() => ({}));
  if (!response.ok || !answer.ok) {
    $('draw-hint').textContent = answer.error || `HTTP ${response.status}`;
    return false;
  }
  await loadAnalytics();
  return true;
}

$('draw-line').onclick = () => startDrawing('line');
$('draw-zone').onclick = () => startDrawing('zone');
$('draw-cancel').onclick = stopDrawing;
$('draw-save').onclick = saveDrawing;

// The latest counts of a zone or line, one per label (zone.occupancy, line.crossed).
function countsOf(inp, plugin, kind, name) {
  const prefix = `${plugin.plugin_index}/${kind}/${name}/`;
  return [...inp.counts.entries()].filter(([k]) => k.startsWith(prefix)).map(([, v]) => v);
}

// Tracks inside a zone now, every label.
function zoneInside(inp, plugin, name) {
  return countsOf(inp, plugin, 'zone', name).reduce((n, c) => n + c.count, 0);
}

// A line's crossings in and out, every label.
function lineTotals(inp, plugin, name) {
  return countsOf(inp, plugin, 'line', name).reduce((t, c) => ({ in: t.in + c.in, out: t.out + c.out }), { in: 0, out: 0 });
}

// ---- Live counts: /metrics' counters, read every 2 s ----

const liveCounts = new Map();

async function pollMetrics() {
  try {
    const response = await fetch(url('metrics'), { headers: authHeaders() });
    if (!response.ok) return;
    const text = await response.text();
    const now = performance.now();
    const seen = new Map();
    // cvhost_plugin_frames_processed_total{source="cam",plugin="barcode",plugin_index="0"} 1234
    for (const m of text.matchAll(/^cvhost_plugin_frames_(processed|dropped)_total\{([^}]*)\} (\S+)$/gm)) {
      const labels = Object.fromEntries([...m[2].matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2].replace(/\\(.)/g, '$1')]));
      const key = `${labels.source}\u0000${labels.plugin_index}`;
      const entry = seen.get(key) || { processed: 0, dropped: 0 };
      entry[m[1]] += Number(m[3]);
      seen.set(key, entry);
    }
    for (const [key, entry] of seen) {
      const before = liveCounts.get(key);
      const seconds = before ? (now - before.at) / 1000 : 0;
      entry.fps = before && seconds > 0 ? (entry.processed - before.processed) / seconds : null;
      entry.at = now;
      liveCounts.set(key, entry);
    }
    drawPanel();
  } catch (err) {
    console.warn('metrics', err);
  }
}

// ---- Controls ----

const pluginEnabled = new Map();

async function send(change) {
  const response = await fetch(url('controls'), {
    method: 'POST', headers: { 'Content-Type': 'application/json', ...authHeaders() }, body: JSON.stringify(change),
  });
  const answer = await response.json();
  if (!answer.ok) alert(answer.error);
  loadControls();
}

async function loadControls() {
  try {
    const response = await fetch(url('controls'), { headers: authHeaders() });
    if (!response.ok) return;
    const all = await response.json();
    const mine = all.sources.find((s) => s.source === current);
    for (const s of all.sources) for (const p of s.plugins) pluginEnabled.set(`${s.source}\u0000${p.plugin_index}`, p.enabled);
    drawPanel();
    const box = $('controls');
    if (!mine || !mine.controls) return;
    box.replaceChildren();
    for (const c of mine.controls.filter((c) => !c.read_only)) {
      const label = document.createElement('label');
      label.textContent = c.name;
      let input;
      if (c.type === 'menu') {
        input = document.createElement('select');
        for (const item of c.menu) input.append(new Option(item, item, false, item === c.value));
      } else {
        input = document.createElement('input');
        input.type = c.type === 'boolean' ? 'checkbox' : 'number';
        if (c.type === 'boolean') input.checked = c.value === 'true';
        else Object.assign(input, { min: c.min, max: c.max, step: c.step, value: c.value });
      }
      input.name = c.name;
      input.onchange = () => send({ source: current, name: c.name, value: c.type === 'boolean' ? input.checked : input.type === 'number' ? Number(input.value) : input.value });
      label.append(input);
      box.append(label);
    }
  } catch (e) {
    console.warn('controls', e);
  }
}

/** Whether the server takes this page's token (or wants none); if not, the page says so and how
 *  to open it, rather than "reconnecting…" over a broken picture. */
let tokenRefused = false;
async function tokenAccepted() {
  try {
    const response = await fetch(url('metrics'), { headers: authHeaders() });
    if (response.status !== 401) return true;
  } catch (e) {
    return true; // not a token matter: the usual reconnecting applies
  }
  tokenRefused = true;
  $('state').className = 'state error';
  $('state').textContent = token
    ? 'this token is not the server\'s: open the address cvhost printed, with ?token=TOKEN from its --http-token-file'
    : 'this server wants its token: open the address cvhost printed, ending in ?token=TOKEN (the token is in the file given to --http-token-file)';
  return false;
}

$('metrics-link').href = url('metrics');
// A fleet's node (cvhost run --fleet): a link to every input of its site.
fetch(url('fleet'), { headers: authHeaders() }).then((r) => {
  if (r.ok) {
    $('site-link').hidden = false;
    $('site-link').querySelector('a').href = url('site.html');
  }
}).catch(() => {});
// The newest picture at once (part of the page's load), until the stream's first one replaces it.
$('picture').onerror = () => $('picture').removeAttribute('src');
$('picture').src = url('snapshot.jpg');
connectEvents();
loadEvidence();
pollMetrics();
const polling = setInterval(pollMetrics, 2000);
// Beside them, not before them (the picture is part of the page's load): a page without the
// server's token stops and says so.
tokenAccepted().then((ok) => { if (!ok) clearInterval(polling); });
