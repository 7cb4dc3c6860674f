// The site's page: every input of this node's site (GET /fleet, every 2 s), the node that runs
// it, its state, and a link to that node's live view. Plain JavaScript served as it is.
'use strict';

const params = new URLSearchParams(location.search);
const token = params.get('token');
const $ = (id) => document.getElementById(id);

function url(path) {
  return token ? `${path}?token=${encodeURIComponent(token)}` : path;
}

/** A cell with `text` (set as text: nothing a store holds is read as HTML), or a link. */
function cell(text, href) {
  const td = document.createElement('td');
  if (href) {
    const a = document.createElement('a');
    a.href = href;
    a.textContent = text;
    td.appendChild(a);
  } else {
    td.textContent = text;
  }
  return td;
}

/** An owner's live view, when it is a web address (anything else is shown as text). */
function liveView(address, input) {
  if (typeof address !== 'string' || !/^https?:\/\//.test(address)) return null;
  return `${address.replace(/\/$/, '')}/?source=${encodeURIComponent(input)}`;
}

function fill(body, rows) {
  body.replaceChildren(...rows.map((cells) => {
    const tr = document.createElement('tr');
    tr.append(...cells);
    return tr;
  }));
}

async function refresh() {
  try {
    const r = await fetch(url('fleet'), { cache: 'no-store' });
    const site = await r.json();
    if (!r.ok) throw new Error(site.error || r.statusText);
    $('site').textContent = `site ${site.site} (node ${site.node})`;
    $('state').textContent = `${site.nodes.length} nodes, ${site.inputs.length} inputs`;
    fill($('inputs').tBodies[0], site.inputs.map((i) => [
      cell(i.name, liveView(i.live_view, i.name)),
      cell(i.owner ?? '—'),
      cell(i.problem ? `refused: ${i.problem}` : i.state ?? (i.owner ? 'starting' : 'waiting for a node')),
      cell(i.fps != null ? i.fps.toFixed(1) : '—'),
      cell(i.last_frame_age != null ? `${i.last_frame_age.toFixed(1)} s` : '—'),
      cell(i.input ?? i.device ?? ''),
    ]));
    fill($('nodes').tBodies[0], site.nodes.map((n) => [
      cell(n.node, liveView(n.http, '')), cell(String(n.inputs.length)), cell(String(n.capacity)),
      cell(n.plugins.join(', ')), cell(n.version),
    ]));
  } catch (e) {
    $('state').textContent = `cannot read the site: ${e.message}`;
  }
}

$('back').href = url('./');
refresh();
setInterval(refresh, 2000);
