// The devpanel page: the event stream (history, then live), the timeline
// with each input's state diff and trace, time travel, the input form, the job
// monitor and the hold. TypeScript, built into web/ by go generate
// (esbuild); its types of what the server sends are those of panel.go,
// hold.go and traceview.go.
import { build, type InputValue, type SchemaDoc } from './form.js';
import { pageToken } from './token.js';

// --- what the server sends ---------------------------------------------------
// An operation of a state diff (JSON Patch).
interface Op {
  op: 'add' | 'remove' | 'replace';
  path: string;
  value?: unknown;
}

// A note of an input: an annotation of its transition.
interface Note {
  type: string;
  text: string;
}

// An input of the journal (the "input" event).
interface Row {
  seq: number;
  time: number;
  version: number;
  dropped?: string;
  type: string;
  actor?: string;
  job?: string; // the key of the job that dispatched the input, when journaled
  recorded?: boolean; // a fork's record answered the job: it did not run
  input: unknown;
  diff: Op[];
  started: string[];
  cancelled: string[];
  notes: Note[];
}

// A row as the page shows it: its table row and the text a search reads.
interface Shown extends Row {
  tr: HTMLTableRowElement;
  text: string;
}

// What waits at the gate or the route, and what runs.
interface Hold {
  held: boolean;
  waiting: { key: string; kind: string; type?: string; input?: unknown }[];
  running: string[];
  stepping: boolean;
}

// The result of a step.
interface Step {
  applied: boolean;
  key?: string;
  type?: string;
  seq?: number;
  error?: string;
}

// A job's event.
interface JobEvent {
  key: string;
  kind: string;
  type?: string;
  at: number;
  durationMs?: number;
  error?: string;
}

// A job as the page keeps it.
interface Job {
  status?: string;
  durationMs?: number;
  error?: string;
  recorded?: boolean; // its inputs came from a fork's record (true) or from its run (false); unknown when absent
}

// What GET /config says. forkable, forkedFrom, delegatedBy and subAgents
// come from a fleet's panel.
interface Config {
  extensions: string[];
  forkable?: boolean;
  forkedFrom?: { agent: string; seq: number };
  delegatedBy?: { agent: string; job: string; depth: number; panel: string };
  subAgents?: boolean;
}

let subAgents = false; // the fleet says where the sub-agents of jobs are

// A lifecycle event: the agent's, the hold's.
interface Lifecycle {
  kind: string;
  at: number;
  error?: string;
  input?: unknown;
  hold?: Hold;
  step?: Step;
}

// A span of an input's trace (GET /trace).
interface Span {
  spanId: string;
  parentId?: string;
  depth: number;
  name: string;
  kind: string;
  category: string;
  start: number;
  end: number | null;
  status: string;
  statusMessage?: string;
  attributes: Record<string, unknown> | null;
  droppedAttributes?: number;
  events: { name: string; at: number; attributes?: Record<string, unknown> }[];
  droppedEvents?: number;
  input?: { seq: number; time: number; type: string; actor?: string; dropped?: string };
  chosen?: boolean;
}

interface Trace {
  seq: number;
  traceId: string;
  start: number;
  spans: Span[];
  omitted: number;
}

type Listener<A extends unknown[]> = (...args: A) => void;

const $ = <T extends HTMLElement = HTMLElement>(id: string): T => document.getElementById(id) as T;
const token = pageToken();
const base = location.pathname.replace(/\/(index\.html)?$/, '');

async function api<T = any>(path: string, opts: RequestInit = {}): Promise<T> {
  const headers = { Authorization: 'Bearer ' + token, ...((opts.headers as Record<string, string>) || {}) };
  const resp = await fetch(base + path, { ...opts, headers });
  const body = await resp.json().catch(() => ({}));
  if (!resp.ok) throw new Error(body.error || resp.statusText);
  return body;
}

function problem(msg: string): void {
  const p = document.createElement('div');
  p.textContent = msg;
  $('problems').append(p);
}

// --- the model of the page -------------------------------------------
const rows = new Map<number, Shown>(); // seq -> row
const jobs = new Map<string, Job>(); // key -> {status, durationMs, error}
let state: unknown = null;
let stateSeq = -1;
let selected: number | null = null;
const listeners: { state: Listener<[unknown, number]>[]; event: Listener<[string, unknown]>[] } = { state: [], event: [] };

// The panel, as an extension's mount(el, panel) gets it.
export const panel = {
  onState(fn: Listener<[unknown, number]>) { listeners.state.push(fn); if (state) fn(state, stateSeq); },
  onEvent(fn: Listener<[string, unknown]>) { listeners.event.push(fn); },
  state: () => state,
  api,
  token: () => token,
};

function notifyState(): void { for (const fn of listeners.state) fn(state, stateSeq); }

// --- JSON Patch ------------------------------------------------------------
function applyPatch(doc: any, ops: Op[]): unknown {
  for (const op of ops) {
    const parts = op.path.split('/').slice(1).map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
    if (parts.length === 0) { doc = op.value; continue; }
    let parent = doc;
    for (const p of parts.slice(0, -1)) parent = parent[p];
    const last = parts[parts.length - 1];
    if (Array.isArray(parent)) {
      if (op.op === 'add') last === '-' ? parent.push(op.value) : parent.splice(Number(last), 0, op.value);
      else if (op.op === 'remove') parent.splice(Number(last), 1);
      else parent[Number(last)] = op.value;
    } else if (op.op === 'remove') delete parent[last];
    else parent[last] = op.value;
  }
  return doc;
}

// --- the event stream --------------------------------------------------
let lastId = '';

async function connect(): Promise<never> {
  for (;;) {
    try {
      const headers: Record<string, string> = { Authorization: 'Bearer ' + token };
      if (lastId) headers['Last-Event-ID'] = lastId;
      const resp = await fetch(base + '/events', { headers });
      if (!resp.ok) throw new Error((await resp.json().catch(() => ({}))).error || resp.statusText);
      setConn('live', 'ok');
      if (!resp.body) throw new Error('no body');
      const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          let id: string | null = null, event = 'message', data = '';
          for (const line of block.split('\n')) {
            if (line.startsWith('id: ')) id = line.slice(4);
            else if (line.startsWith('event: ')) event = line.slice(7);
            else if (line.startsWith('data: ')) data += line.slice(6);
          }
          if (event === 'message' && !data) continue;
          if (id !== null) lastId = id;
          handle(event, data ? JSON.parse(data) : null);
        }
      }
    } catch (e) {
      setConn('reconnecting: ' + (e as Error).message, 'bad');
    }
    setConn('reconnecting', 'warn');
    await new Promise((r) => setTimeout(r, 1000));
  }
}

function setConn(text: string, cls: string): void {
  $('conn').textContent = text;
  $('conn').className = 'badge ' + cls;
}

function handle(event: string, data: unknown): void {
  switch (event) {
    case 'input': {
      const r = data as Row;
      addRow(r);
      traceLater();
      if (state !== null && r.seq === stateSeq + 1) {
        state = applyPatch(state, r.diff);
        stateSeq = r.seq;
        notifyState();
      }
      break;
    }
    case 'snapshot': {
      const s = data as { seq: number; state: unknown; hold: Hold };
      state = s.state;
      stateSeq = s.seq;
      showHold(s.hold);
      notifyState();
      break;
    }
    case 'job':
      jobEvent(data as JobEvent);
      traceLater();
      break;
    case 'lifecycle': {
      const l = data as Lifecycle;
      if (l.hold) showHold(l.hold);
      if (l.kind === 'step' && l.step) showStep(l.step);
      if (l.kind === 'rejected') problem(`input rejected: ${l.error}`);
      if (l.kind === 'failed') problem(`the agent failed: ${l.error}`);
      break;
    }
    case 'reset':
      rows.clear();
      newest = 0;
      $('rows').replaceChildren();
      lastId = '';
      break;
    case 'close':
      setConn('closed', 'bad');
      break;
  }
  for (const fn of listeners.event) fn(event, data);
}

// --- the timeline ----------------------------------------------------------
const actors = new Set<string>();
const types = new Set<string>();
// newest is the newest spec version among the rows: a row journaled under
// an older one (its input brought up by a migration) shows a badge.
let newest = 0;

function addOption(select: HTMLSelectElement, set: Set<string>, v: string | undefined): void {
  if (!v || set.has(v)) return;
  set.add(v);
  select.append(new Option(v, v));
}

function addRow(row: Row): void {
  if (rows.has(row.seq)) return;
  const tr = document.createElement('tr');
  const r: Shown = Object.assign(row, { tr, text: '' });
  rows.set(r.seq, r);
  addOption($<HTMLSelectElement>('f-actor'), actors, r.actor);
  addOption($<HTMLSelectElement>('f-type'), types, r.type);
  tr.className = 'row';
  tr.dataset.seq = String(r.seq);
  tr.dataset.type = r.type; // the input's type, without the badges the cell gets
  const cells = [String(r.seq), new Date(r.time).toLocaleTimeString(), r.actor || '', r.type];
  for (const c of cells) {
    const td = document.createElement('td');
    td.textContent = c;
    tr.append(td);
  }
  if (r.job) tr.children[3].append(answerBadge(r.recorded ? 'recorded' : 'live', r.job));
  if (r.version) {
    const v = document.createElement('span');
    v.className = 'version';
    v.textContent = 'v' + r.version;
    v.title = `journaled under version ${r.version} of the spec, brought up to the newest by its migrations`;
    tr.children[0].append(v);
  }
  const notes = document.createElement('td');
  if (r.dropped) {
    tr.classList.add('dropped');
    tr.title = r.dropped + ': kept in the journal, not applied';
    const s = document.createElement('span');
    s.className = 'dropped-why';
    s.textContent = r.dropped;
    notes.append(s);
  }
  for (const n of r.notes) {
    const s = document.createElement('span');
    s.className = 'note';
    s.title = n.text;
    s.textContent = n.type;
    notes.append(s);
  }
  tr.append(notes);
  const j = document.createElement('td');
  j.className = 'job';
  j.textContent = [...r.started.map((k) => '+' + k), ...r.cancelled.map((k) => '−' + k)].join(' ');
  tr.append(j);
  tr.addEventListener('click', () => select(r.seq));
  $('rows').append(tr);
  r.text = (JSON.stringify(r.input) + ' ' + r.type + ' ' + (r.dropped || '') + ' ' + r.notes.map((n) => n.type + ' ' + n.text).join(' ')).toLowerCase();
  if ((r.version || 0) > newest) {
    newest = r.version;
    for (const o of rows.values()) markVersion(o);
  } else markVersion(r);
  markRow(r);
  filterRow(r);
  if (r.job) {
    const j: Job = jobs.get(r.job) || {};
    j.recorded = !!r.recorded;
    jobs.set(r.job, j);
    markJob(r.job);
  }
  $('count').textContent = `${rows.size} inputs`;
}

// answerBadge says how a job's input came: from a fork's record, the job
// not run ("from the record"), or from the job, which ran ("live").
function answerBadge(how: 'recorded' | 'live', key: string): HTMLSpanElement {
  const b = document.createElement('span');
  b.className = 'answer ' + how;
  b.textContent = how === 'recorded' ? 'from the record' : 'live';
  b.title = how === 'recorded'
    ? `${key} did not run: answered with what it answered in the conversation forked`
    : `dispatched by ${key}, which ran`;
  return b;
}

// markVersion shows a row's version when it is older than the newest.
function markVersion(r: Shown): void {
  r.tr.classList.toggle('old', r.version < newest);
}

function rowStatus(r: Row): { failed: boolean; pending: boolean } {
  let failed = false, pending = false;
  for (const k of r.started) {
    const j = jobs.get(k);
    if (!j) continue;
    if (j.status === 'failed') failed = true;
    if (['started', 'held', 'input-held', 'released'].includes(j.status ?? '')) pending = true;
  }
  return { failed, pending };
}

function markRow(r: Shown): void {
  const { failed, pending } = rowStatus(r);
  r.tr.classList.toggle('failed', failed);
  r.tr.classList.toggle('pending', pending);
}

function filterRow(r: Shown): void {
  const actor = $<HTMLSelectElement>('f-actor').value, type = $<HTMLSelectElement>('f-type').value;
  const q = $<HTMLInputElement>('f-search').value.trim().toLowerCase();
  const { failed, pending } = rowStatus(r);
  const show = (!actor || r.actor === actor) && (!type || r.type === type) &&
    (!$<HTMLInputElement>('f-failed').checked || failed) && (!$<HTMLInputElement>('f-pending').checked || pending) && (!q || r.text.includes(q));
  r.tr.hidden = !show;
}

function refilter(): void { for (const r of rows.values()) filterRow(r); }
for (const id of ['f-actor', 'f-type', 'f-failed', 'f-pending']) $(id).addEventListener('change', refilter);
$('f-search').addEventListener('input', refilter);

function select(seq: number): void {
  const r = rows.get(seq);
  if (!r) return;
  if (selected !== null) rows.get(selected)?.tr.classList.remove('selected');
  selected = seq;
  r.tr.classList.add('selected');
  $('detail').hidden = false;
  $('d-seq').textContent = `${r.seq} (${r.type})` + (r.dropped ? ', dropped' : '') + (r.version ? `, spec version ${r.version}` : '');
  $('d-input').textContent = r.dropped ? `${r.dropped}: kept in the journal, not applied` : JSON.stringify(r.input, null, 2);
  const ul = $('diff');
  ul.replaceChildren();
  for (const op of r.diff) {
    const li = document.createElement('li');
    li.className = 'op-' + op.op;
    li.textContent = `${op.op} ${op.path}` + (op.value !== undefined ? ' = ' + clip(JSON.stringify(op.value), 300) : '');
    ul.append(li);
  }
  if (r.diff.length === 0) ul.append(Object.assign(document.createElement('li'), { textContent: 'no change' }));
  const dj = $('d-jobs');
  dj.replaceChildren();
  for (const k of r.started) dj.append(Object.assign(document.createElement('li'), { textContent: `started ${k} (${jobs.get(k)?.status || 'not seen'})` }));
  for (const k of r.cancelled) dj.append(Object.assign(document.createElement('li'), { textContent: `cancelled ${k}` }));
  $<HTMLInputElement>('tt-seq').value = String(seq);
  showTrace(seq);
}

function clip(s: string, n: number): string { return s.length > n ? s.slice(0, n) + '…' : s; }

// --- the trace of the chosen input ------------------------------------------
// GET /trace?seq=N: the spans of the input's trace, depth first, each with
// its depth; drawn as a waterfall, the chosen input's span highlighted. A
// click on a row shows its attributes, events and journal entry.
let traceSeq: number | null = null;
let traceTimer: ReturnType<typeof setTimeout> | undefined;
const traceOpen = new Set<string>(); // span ids whose details are shown
const maxIndent = 24; // levels; a long chain of jobs and inputs goes deeper

async function showTrace(seq: number): Promise<void> {
  if (traceSeq !== seq) traceOpen.clear();
  traceSeq = seq;
  let t: Trace;
  try {
    t = await api<Trace>('/trace?seq=' + seq);
  } catch (e) {
    if (traceSeq !== seq) return;
    $('tr-info').textContent = '';
    $('trace').replaceChildren(Object.assign(document.createElement('p'), { className: 'tr-none', textContent: (e as Error).message }));
    return;
  }
  if (traceSeq !== seq) return; // another input was chosen meanwhile
  drawTrace(t);
}

function fmtMs(ms: number): string {
  if (ms >= 1000) return (ms / 1000).toFixed(2) + ' s';
  if (ms >= 10) return ms.toFixed(0) + ' ms';
  if (ms >= 1) return ms.toFixed(1) + ' ms';
  return ms.toFixed(2) + ' ms';
}

function drawTrace(t: Trace): void {
  let total = 0;
  for (const s of t.spans) total = Math.max(total, s.end ?? s.start);
  const span = total > 0 ? total : 1;
  $('tr-info').textContent = `${t.spans.length} spans, ${fmtMs(total)}` +
    (t.omitted ? `, ${t.omitted} more left out` : '') + ` · trace ${t.traceId.slice(0, 8)}…`;
  const wf = document.createElement('div');
  wf.className = 'wf';
  const axis = document.createElement('div');
  axis.className = 'wf-axis';
  axis.append(Object.assign(document.createElement('span'), { textContent: 'span' }),
    Object.assign(document.createElement('span'), { textContent: '0 → ' + fmtMs(total) }),
    Object.assign(document.createElement('span'), { textContent: 'duration' }));
  wf.append(axis);
  for (const s of t.spans) {
    const running = s.end === null;
    const end = s.end === null ? total : s.end;
    const row = document.createElement('div');
    row.className = `wf-row cat-${s.category}` + (s.chosen ? ' chosen' : '') + (s.status === 'error' ? ' error' : '') + (running ? ' running' : '');
    row.dataset.span = s.spanId;
    row.dataset.depth = String(s.depth);
    row.dataset.parent = s.parentId || '';
    const name = document.createElement('div');
    name.className = 'wf-name';
    name.style.paddingLeft = (Math.min(s.depth, maxIndent) * 16) + 'px';
    const cat = Object.assign(document.createElement('span'), { className: 'wf-cat', textContent: s.category });
    const label = Object.assign(document.createElement('span'), { className: 'wf-label', textContent: s.name });
    const extra = spanNote(s);
    if (extra) label.append(' ', Object.assign(document.createElement('small'), { textContent: extra }));
    name.append(cat, label);
    const track = document.createElement('div');
    track.className = 'wf-track';
    const bar = document.createElement('div');
    bar.className = 'wf-bar';
    bar.style.left = (100 * s.start / span) + '%';
    bar.style.width = (100 * (end - s.start) / span) + '%';
    track.append(bar);
    const dur = Object.assign(document.createElement('div'), { className: 'wf-dur', textContent: running ? 'running' : fmtMs(end - s.start) });
    row.title = s.status === 'error' ? `${s.name}: ${s.statusMessage || 'error'}` : s.name;
    row.append(name, track, dur);
    const more = Object.assign(document.createElement('pre'), { className: 'wf-more', textContent: spanDetails(s) });
    more.style.paddingLeft = (Math.min(s.depth, maxIndent) * 16 + 8) + 'px';
    more.hidden = !traceOpen.has(s.spanId);
    row.addEventListener('click', () => {
      more.hidden = !more.hidden;
      if (more.hidden) traceOpen.delete(s.spanId); else traceOpen.add(s.spanId);
    });
    wf.append(row, more);
  }
  $('trace').replaceChildren(wf);
}

// spanNote is what a row adds to its span's name: an input's place in the
// journal, a job's key.
function spanNote(s: Span): string {
  if (s.input) return `#${s.input.seq}` + (s.input.actor ? ` · ${s.input.actor}` : '');
  if (s.category === 'input' && s.attributes && s.attributes['moora.input.seq']) return `#${s.attributes['moora.input.seq']}`;
  if (s.category === 'job' && s.attributes) return String(s.attributes['moora.job.key'] ?? '');
  return '';
}

function spanDetails(s: Span): string {
  const lines = [`${s.kind} span ${s.spanId}` + (s.parentId ? `, child of ${s.parentId}` : '') +
    `, ${fmtMs(s.start)} → ` + (s.end === null ? 'running' : fmtMs(s.end))];
  if (s.status === 'error') lines.push(`error: ${s.statusMessage || ''}`);
  if (s.input) lines.push(`journal: input ${s.input.seq} (${s.input.type})` + (s.input.actor ? ` by ${s.input.actor}` : '') +
    `, ${new Date(s.input.time).toLocaleTimeString()}` + (s.input.dropped ? `, ${s.input.dropped}` : ''));
  for (const [k, v] of Object.entries(s.attributes || {})) lines.push(`${k} = ${typeof v === 'string' ? v : JSON.stringify(v)}`);
  if (s.droppedAttributes) lines.push(`(${s.droppedAttributes} more attributes)`);
  for (const e of s.events) lines.push(`@${fmtMs(e.at)} ${e.name}` + (e.attributes ? ' ' + JSON.stringify(e.attributes) : ''));
  return lines.join('\n');
}

// A trace grows while its jobs run: it is fetched again after the events
// that follow, once they pause.
function traceLater(): void {
  if (traceSeq === null || $('detail').hidden) return;
  clearTimeout(traceTimer);
  traceTimer = setTimeout(() => { if (traceSeq !== null) showTrace(traceSeq); }, 400);
}

$('tr-refresh').addEventListener('click', () => { if (traceSeq !== null) showTrace(traceSeq); });

// --- jobs and the hold ---------------------------------------------------------
function jobEvent(e: JobEvent): void {
  const j: Job = jobs.get(e.key) || {};
  j.status = e.kind;
  if (e.durationMs !== undefined) j.durationMs = e.durationMs;
  j.error = e.error || '';
  jobs.set(e.key, j);
  let tr = document.querySelector<HTMLTableRowElement>(`#jobs tr[data-key="${CSS.escape(e.key)}"]`);
  if (!tr) {
    tr = document.createElement('tr');
    tr.dataset.key = e.key;
    tr.innerHTML = '<td class="job"></td><td></td><td></td>';
    tr.children[0].textContent = e.key;
    $('jobs').prepend(tr);
    if (subAgents) linkSubAgent(tr, e.key);
  }
  tr.children[1].textContent = e.kind + (e.type ? ' ' + e.type : '') + (j.error ? ': ' + j.error : '');
  tr.children[1].className = 'status-' + e.kind;
  tr.children[2].textContent = j.durationMs !== undefined ? String(j.durationMs) : '';
  markJob(e.key);
  for (const r of rows.values()) if (r.started.includes(e.key)) { markRow(r); filterRow(r); }
}

// linkSubAgent makes a job's key in the monitor a link to the panel of the
// sub-agent it delegates to, if it does.
async function linkSubAgent(tr: HTMLTableRowElement, key: string): Promise<void> {
  let r: { panel: string };
  try {
    r = await api<{ panel: string }>('/subagent?job=' + encodeURIComponent(key));
  } catch {
    return; // no sub-agent
  }
  const a = document.createElement('a');
  a.className = 'subagent';
  a.href = withToken(r.panel);
  a.textContent = key;
  a.title = 'the sub-agent this job delegates to';
  const cell = tr.children[0];
  cell.firstChild?.replaceWith(a);
}

// withToken is the address of a panel at url (relative to this one's),
// with the token in its fragment.
function withToken(url: string): string {
  const to = new URL(url, new URL(base + '/', location.href));
  to.hash = 'token=' + encodeURIComponent(token);
  return to.href;
}

// showDelegatedBy says in the header whose sub-agent this is.
function showDelegatedBy(d: { agent: string; job: string; depth: number; panel: string }): void {
  const link = $<HTMLAnchorElement>('delegated-link');
  link.href = withToken(d.panel);
  link.textContent = d.agent;
  $('delegated-job').textContent = d.job;
  $('delegated').hidden = false;
  document.title = `devpanel · sub-agent of ${d.agent}`;
}

// markJob shows in the monitor whether a job's inputs came from a fork's
// record, the job not run, or from its run: known from the timeline's rows
// of its inputs, once there is one.
function markJob(key: string): void {
  const tr = document.querySelector<HTMLTableRowElement>(`#jobs tr[data-key="${CSS.escape(key)}"]`);
  const j = jobs.get(key);
  if (!tr || j?.recorded === undefined) return;
  tr.classList.toggle('from-record', j.recorded);
  tr.classList.toggle('ran', !j.recorded);
  tr.children[0].querySelector('.answer')?.remove();
  tr.children[0].append(answerBadge(j.recorded ? 'recorded' : 'live', key));
}

// showHold shows the hold: what waits at the gate (jobs) and at the route
// (inputs), and what runs.
function showHold(h: Hold): void {
  const inputs = h.waiting.filter((w) => w.kind === 'input').length;
  const jobsHeld = h.waiting.length - inputs;
  $('held').textContent = h.held ? `held: ${jobsHeld} jobs, ${inputs} inputs waiting` : (h.waiting.length ? `${h.waiting.length} waiting` : 'jobs run');
  $('held').title = [...h.waiting.map((w) => w.kind === 'input' ? `input ${w.type} from ${w.key}` : `job ${w.key}`), ...h.running.map((k) => `running ${k}`)].join('\n');
  $('held').className = 'badge ' + (h.held ? 'warn' : 'ok');
  $<HTMLButtonElement>('hold').disabled = h.held;
  $<HTMLButtonElement>('step').disabled = !h.held || h.stepping || (h.waiting.length === 0 && h.running.length === 0);
  $<HTMLButtonElement>('release').disabled = !h.held && h.waiting.length === 0;
}

function showStep(s: Step): void {
  $('stepped').hidden = false;
  $('stepped').textContent = s.applied ? `stepped: input ${s.seq} (${s.type})` : `step: ${s.error}`;
  $('stepped').className = 'badge ' + (s.applied ? 'ok' : 'bad');
}

for (const op of ['hold', 'step', 'release']) {
  $(op).addEventListener('click', async () => {
    try {
      if (op === 'step') $<HTMLButtonElement>('step').disabled = true;
      const r = await api<Hold & { step?: Step }>('/' + op, { method: 'POST' });
      showHold(r);
      if (r.step) showStep(r.step);
    } catch (e) { problem(`${op}: ${(e as Error).message}`); }
  });
}

// --- time travel ----------------------------------------------------------------
$('tt-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  try {
    const r = await api<{ seq: number; jobs: string[]; state: unknown }>('/state?seq=' + encodeURIComponent($<HTMLInputElement>('tt-seq').value));
    $('tt-out').hidden = false;
    $('tt-shown').textContent = String(r.seq);
    const fork = $<HTMLButtonElement>('tt-fork');
    fork.disabled = r.seq === 0;
    fork.title = r.seq === 0 ? 'A fork starts after an input: show the state after one' : forkTitle;
    const ul = $('tt-jobs');
    ul.replaceChildren();
    for (const k of r.jobs) ul.append(Object.assign(document.createElement('li'), { textContent: k }));
    if (r.jobs.length === 0) ul.append(Object.assign(document.createElement('li'), { textContent: 'none' }));
    $('tt-state').textContent = JSON.stringify(r.state, null, 2);
  } catch (e) {
    problem(`time travel: ${(e as Error).message}`);
  }
});

// A fork of a fleet's panel (GET /config: forkable): POST /fork at the input
// shown, then the fork's own panel, in this tab, the token passed in the
// fragment as the fleet's list passes it.
const forkTitle = $('tt-fork').title;
$('tt-fork').addEventListener('click', async () => {
  const fork = $<HTMLButtonElement>('tt-fork');
  fork.disabled = true;
  try {
    const r = await api<{ id: string; panel: string }>('/fork', {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ seq: Number($('tt-shown').textContent) }),
    });
    const to = new URL(r.panel, new URL(base + '/fork', location.href));
    to.hash = 'token=' + encodeURIComponent(token);
    location.assign(to.href);
  } catch (e) {
    fork.disabled = false;
    problem(`fork: ${(e as Error).message}`);
  }
});

// showOrigin says, in the header, which agent a fork came from and where,
// with a link to that agent's panel.
function showOrigin(from: { agent: string; seq: number }): void {
  const link = $<HTMLAnchorElement>('origin-link');
  link.href = withToken('../' + encodeURIComponent(from.agent) + '/');
  link.textContent = from.agent;
  $('origin-seq').textContent = String(from.seq);
  $('origin').hidden = false;
  $<HTMLInputElement>('tt-seq').min = String(from.seq); // before, the state is the parent's

  document.title = `devpanel · fork of ${from.agent}`;
}

// --- the input form ----------------------------------------------------------------
let schema: SchemaDoc | null = null;
let read: (() => { value: InputValue; errors: string[] }) | null = null;

function showForm(): void {
  if (!schema) return;
  read = build(schema, $<HTMLSelectElement>('in-type').value, $('in-fields'));
  $('in-msg').textContent = '';
}

$('in-type').addEventListener('change', showForm);
$('in-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const msg = $('in-msg');
  if (!read) return;
  const { value, errors } = read();
  if (errors.length > 0) {
    msg.className = 'error';
    msg.textContent = 'Not sent:\n' + errors.join('\n');
    return;
  }
  try {
    const r = await api<{ seq: number }>('/inputs', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(value) });
    msg.className = 'ok';
    msg.textContent = `Sent: input ${r.seq}`;
  } catch (e) {
    msg.className = 'error';
    msg.textContent = 'Refused: ' + (e as Error).message;
  }
});

// --- start ---------------------------------------------------------------------
async function start(): Promise<void> {
  try {
    const h = await api<{ status: string }>('/health');
    $('health').textContent = 'health: ' + h.status;
    $('health').className = 'badge ok';
  } catch (e) {
    $('health').textContent = 'health: ' + (e as Error).message;
    $('health').className = 'badge bad';
  }
  try {
    const doc = await api<SchemaDoc>('/schema');
    schema = doc;
    for (const t of Object.keys(doc.inputs).sort()) $('in-type').append(new Option(t, t));
    showForm();
  } catch (e) {
    problem(`the input schema: ${(e as Error).message}`);
  }
  try {
    const cfg = await api<Config>('/config');
    $('tt-fork-row').hidden = !cfg.forkable;
    if (cfg.forkedFrom) showOrigin(cfg.forkedFrom);
    if (cfg.delegatedBy) showDelegatedBy(cfg.delegatedBy);
    subAgents = !!cfg.subAgents;
    for (const url of cfg.extensions) {
      const el = document.createElement('div');
      $('ext').append(el);
      const mod: { mount(el: HTMLElement, p: typeof panel): void } = await import(url);
      mod.mount(el, panel);
    }
  } catch (e) {
    problem(`an extension: ${(e as Error).message}`);
  }
  connect();
}

start();
