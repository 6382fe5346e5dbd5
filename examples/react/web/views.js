// The ReAct views of a run's devpanel (an extension: see package
// automata/devpanel): the run's state and iteration with alert badges, its
// recoveries out of error, the configuration it runs under, a box to answer
// the agent or run a new task (a run of its own, whose panel then opens),
// the task tree at every level with each task's latest observation, and the
// tool monitor. The panel is the devpanel
// fleet's /agents/{agent}/; its root, two levels up, lists the runs.
// The panel's token (panel.token(), set by mount): sent with each request,
// and passed to the panels this one links to in a fragment, which no
// request carries.
let token = '';
const fragment = () => '#token=' + encodeURIComponent(token);

function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') el.className = v;
    else el.setAttribute(k, v);
  }
  for (const c of children) el.append(c);
  return el;
}

// post sends body to the bridge; the page asks for an answer at once
// (respond-async), as it watches the run through the panel's stream.
async function post(path, body) {
  const resp = await fetch(path, {
    method: 'POST',
    headers: { Authorization: 'Bearer ' + token, 'Content-Type': 'application/json', Prefer: 'respond-async' },
    body: JSON.stringify(body),
  });
  const out = await resp.json().catch(() => ({}));
  if (!resp.ok) throw new Error(out.error || resp.statusText);
  return out;
}

export function mount(el, panel) {
  token = panel.token();
  const style = h('style');
  style.textContent = `
    .react { display: grid; grid-template-columns: 1.1fr 1fr 1.6fr; gap: 1em; }
    .react h2 { margin-top: 0; }
    .react .phase { font-size: 18px; font-weight: 700; text-transform: uppercase; }
    .react .phase-error { color: #c23b3b; } .react .phase-finished { color: #2f8f4e; }
    .react .alert { background: #c23b3b; color: #fff; border-radius: 1em; padding: 0 .6em; margin-right: .3em; font-size: 11px; }
    .react ul.tree, .react ul.tree ul { list-style: none; padding-left: 1em; margin: 0; }
    .react .st { display: inline-block; min-width: 5.5em; font-size: 11px; font-weight: 600; }
    .react .st-done { color: #2f8f4e; } .react .st-failed { color: #c23b3b; } .react .st-running { color: #2a5db0; } .react .st-pending { color: #5b6478; }
    .react .res { color: #5b6478; font-size: 11px; margin-left: 1.5em; white-space: pre-wrap; }
    .react table td { font-size: 11px; }
    .react .ok { color: #2f8f4e; } .react .bad { color: #c23b3b; }
    .react .answer { white-space: pre-wrap; background: #eef7f0; padding: .4em; }
    .react .question { background: #fdf3dc; padding: .4em; }
    .react .obs { font-size: 11px; margin-left: 1.5em; white-space: pre-wrap; }
    .react .recoveries li, .react .config { font-size: 11px; color: #5b6478; }
    .react .recoveries { padding-left: 1.2em; margin: .3em 0; }
  `;
  const phase = h('div', { id: 'react-phase', class: 'phase' });
  const run = h('div', { id: 'react-run' });
  const iteration = h('div', { id: 'react-iteration' });
  const alerts = h('div', { id: 'react-alerts' });
  const usage = h('div', { id: 'react-usage', class: 'config' });
  const budget = h('div', { id: 'react-budget', class: 'question' });
  const question = h('div', { id: 'react-question', class: 'question' });
  const answer = h('div', { id: 'react-answer', class: 'answer' });
  const recoveries = h('ul', { id: 'react-recoveries', class: 'recoveries' });
  const config = h('div', { id: 'react-config', class: 'config' });
  const goal = h('input', { id: 'react-goal', type: 'text', placeholder: 'a task: compute 2*21 and find plans', size: '34' });
  const runBtn = h('button', { id: 'react-run-task', type: 'submit' }, 'Run');
  const form = h('form', { id: 'react-task' }, goal, runBtn);
  const msg = h('div', { id: 'react-msg' });
  const runs = h('a', { id: 'react-runs', href: '../../' + fragment() }, 'all runs');
  const tree = h('ul', { id: 'react-tree', class: 'tree' });
  const tools = h('tbody', { id: 'react-tools' });
  const status = h('div', {}, h('h2', {}, 'ReAct ', h('small', {}, '(', runs, ')')), phase, run, iteration, usage, budget, alerts, recoveries, question, answer, form, msg, config);
  const treeBox = h('div', {}, h('h2', {}, 'Task tree'), tree);
  const toolBox = h('div', {}, h('h2', {}, 'Tool monitor'),
    h('table', {}, h('thead', {}, h('tr', {}, ...['call', 'tool', 'try', 'parameters', 'result', 'ms', 'retries', 'strategy'].map((t) => h('th', {}, t)))), tools));
  el.append(style, h('div', { class: 'react' }, status, treeBox, toolBox));

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const text = goal.value.trim();
    if (!text) return;
    const s = panel.state();
    try {
      if (s && s.phase === 'waiting') {
        await post('/reply', { runId: s.runId, content: text });
        msg.textContent = 'replied';
      } else {
        // A new task is a run of its own: open its panel.
        const r = await post('/run', { goal: text });
        msg.textContent = `started ${r.runId}`;
        location.assign(`../${encodeURIComponent(r.agent)}/${fragment()}`);
        return;
      }
      goal.value = '';
    } catch (e) {
      msg.textContent = 'refused: ' + e.message;
    }
  });

  panel.onState((s) => {
    phase.textContent = s.phase;
    phase.className = 'phase phase-' + s.phase;
    const asked = (s.requests || [])[0];
    run.textContent = s.runId ? `run ${s.runId}: ${s.goal}` : asked ? `run ${asked.runId} waits for its turn: ${asked.goal}` : 'no run yet';
    const recovered = (s.recoveries || []).filter((r) => r.strategy !== 'give-up').length;
    iteration.textContent = s.runId ? `iteration ${s.iteration} of ${s.limits.maxIterations} · failures in a row ${s.failures} of ${s.limits.maxFailures}` +
      ` · recoveries ${recovered} of ${s.limits.maxRecoveries || 0} · depth up to ${s.limits.maxDepth || 3}` : '';
    // The planner's model: the totals the state keeps, and the budget's
    // stop, which a plan that called the model clears.
    const u = s.usage || {};
    usage.textContent = u.calls ? `model: ${u.calls} calls · ${(u.inputTokens || 0) + (u.outputTokens || 0)} tokens · $${(u.cost || 0).toFixed(4)}` : '';
    const ex = s.budgetExhausted || {};
    budget.hidden = !ex.timestamp;
    budget.textContent = ex.timestamp ? 'budget exhausted: the agent asks the planner no more (budget ' +
      [ex.maxTokens ? `${ex.maxTokens} tokens` : '', ex.maxCost ? `$${ex.maxCost}` : ''].filter(Boolean).join(', ') + ')' : '';
    alerts.replaceChildren(...(s.alerts || []).map((a) => h('span', { class: 'alert', title: a.message }, a.guard)));
    recoveries.replaceChildren(...(s.recoveries || []).map((r) =>
      h('li', { 'data-recovery': r.strategy }, `${r.strategy}: ${r.reason}`)));
    const c = s.config;
    config.textContent = c && c.digest ? `configuration ${c.source} (sha256 ${c.digest.slice(0, 12)}) · tools ${Object.keys(c.tools || {}).sort().join(', ')}` +
      ` · strategies ${(c.strategies || []).join(' → ')} · recovery ${(c.recovery || []).join(' → ') || 'none'}` : 'no configuration (the built-in defaults)';
    question.hidden = s.phase !== 'waiting';
    question.textContent = s.phase === 'waiting' ? 'The agent asks: ' + s.question : '';
    const over = (s.runs || []).some((r) => r.runId === s.runId);
    answer.hidden = !(s.phase === 'finished' || s.phase === 'error');
    answer.textContent = s.phase === 'finished' ? s.answer : s.phase === 'error' ? (over ? 'error: ' : 'error, recovering: ') + s.error : '';
    runBtn.textContent = s.phase === 'waiting' ? 'Reply' : 'Run';

    const obs = new Map((s.observations || []).map((o) => [o.callId, o]));
    const byId = new Map((s.tasks || []).map((t) => [t.taskId, t]));
    // The latest observation of each task: of its own calls, or for a task
    // with subtasks, of theirs (its subtree's).
    const latest = new Map();
    for (const o of s.observations || []) {
      for (let id = o.relatedTaskId, n = 0; id && byId.has(id) && n < 64; id = byId.get(id).parentId, n++) {
        latest.set(id, o);
      }
    }
    const clip = (x, n) => (x.length > n ? x.slice(0, n) + '…' : x);
    const node = (t) => {
      const li = h('li', { 'data-task': t.taskId },
        h('span', { class: 'st st-' + t.status }, t.status), `${t.taskId}: ${t.description}`);
      const result = t.metadata?.result ?? t.metadata?.rollback ?? t.metadata?.error;
      if (result) li.append(h('div', { class: 'res' }, clip(result, 200)));
      const o = latest.get(t.taskId);
      if (o) {
        const via = o.relatedTaskId !== t.taskId ? ` (${o.relatedTaskId})` : '';
        li.append(h('div', { class: 'obs ' + (o.success ? 'ok' : 'bad'), 'data-observation': o.callId },
          `latest: ${o.callId} ${o.source}${via} ` + (o.success ? `ok in ${o.latencyMs} ms: ${clip(o.payload, 120)}` : `${o.errorKind}: ${clip(o.error, 120)}`)));
      }
      const kids = (t.children || []).map((id) => byId.get(id)).filter(Boolean);
      if (kids.length) li.append(h('ul', {}, ...kids.map(node)));
      return li;
    };
    tree.replaceChildren(...(s.tasks || []).filter((t) => !t.parentId).map(node));

    tools.replaceChildren(...(s.calls || []).map((c) => {
      const o = obs.get(c.callId);
      const result = !o ? (s.phase === 'act' ? 'running…' : '') : o.success ? o.payload : `${o.errorKind}: ${o.error}`;
      return h('tr', { 'data-call': c.callId },
        h('td', {}, c.callId), h('td', {}, c.tool), h('td', {}, String(c.attempt)),
        h('td', {}, JSON.stringify(c.parameters)),
        h('td', { class: o ? (o.success ? 'ok' : 'bad') : '' }, result.length > 120 ? result.slice(0, 120) + '…' : result),
        h('td', {}, o ? String(o.latencyMs) : ''), h('td', {}, o ? String(o.retries) : ''), h('td', {}, c.strategy));
    }));
  });
}
