// The input form: fields generated from an input's JSON Schema, and a
// validator for the subset of JSON Schema agentgen emits, so that an input
// is checked before it is sent (the server checks it again).

// The subset of JSON Schema agentgen emits for inputs, as the panel reads it.
export interface Schema {
  $ref?: string;
  type?: string | string[];
  description?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  additionalProperties?: Schema | boolean;
  enum?: string[];
  const?: unknown;
  allOf?: Schema[];
  oneOf?: Schema[];
  readOnly?: boolean;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minItems?: number;
  maxItems?: number;
}

// The document of the inputs' schemas (GET /schema).
export interface SchemaDoc {
  $defs: Record<string, Schema>;
  inputs: Record<string, Schema>;
}

// An input the form read: its type and properties.
export type InputValue = { type: string } & Record<string, unknown>;

// A field of the form and how to read it.
type Field = HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement;

// resolve follows a $ref into the document's $defs, and merges allOf.
export function resolve(doc: SchemaDoc, s: Schema | undefined): Schema {
  while (s && s.$ref) s = doc.$defs[s.$ref.replace('#/$defs/', '')];
  if (s && s.allOf) {
    const merged: Schema & { properties: Record<string, Schema>; required: string[] } = { type: 'object', properties: {}, required: [] };
    for (const part of s.allOf) {
      const r = resolve(doc, part);
      Object.assign(merged.properties, r.properties || {});
      merged.required.push(...(r.required || []));
    }
    Object.assign(merged.properties, s.properties || {});
    merged.required.push(...(s.required || []));
    return merged;
  }
  return s || {};
}

function kind(s: Schema): string {
  if (s.enum) return 'enum';
  if (s.const !== undefined) return 'const';
  const t = Array.isArray(s.type) ? s.type.find((x) => x !== 'null') : s.type;
  if (t) return t;
  if (s.properties || s.additionalProperties) return 'object';
  if (s.items) return 'array';
  return 'json';
}

// build fills container with a field per property of input type's schema
// and returns a function that reads them: {value, errors}.
export function build(doc: SchemaDoc, type: string, container: HTMLElement): () => { value: InputValue; errors: string[] } {
  const full = resolve(doc, doc.inputs[type]);
  // A readOnly property is the server's to assign (the agent's admission
  // step): the form leaves it out, and the panel's decoder lets it be.
  const assigned = new Set(Object.entries(full.properties || {}).filter(([, p]) => p.readOnly).map(([n]) => n));
  const schema = { ...full, required: (full.required || []).filter((n) => !assigned.has(n)) };
  const required = new Set(schema.required);
  const readers: { name: string; el: Field; k: string; s: Schema; required: boolean }[] = [];
  container.replaceChildren();
  for (const [name, raw] of Object.entries(schema.properties || {})) {
    const s = resolve(doc, raw);
    const k = kind(s);
    if (k === 'const' || assigned.has(name)) continue; // the type discriminator, or the server's
    const label = document.createElement('label');
    const title = document.createElement('span');
    title.textContent = name + (required.has(name) ? ' *' : '');
    label.append(title);
    let el: Field;
    if (k === 'enum') {
      const sel = document.createElement('select');
      if (!required.has(name)) sel.append(new Option('', ''));
      for (const v of s.enum ?? []) sel.append(new Option(v, v));
      el = sel;
    } else if (k === 'boolean') {
      const box = document.createElement('input');
      box.type = 'checkbox';
      el = box;
    } else if (k === 'object' || k === 'array' || k === 'json') {
      const area = document.createElement('textarea');
      area.rows = 3;
      area.placeholder = k === 'array' ? '[ ... ] (JSON)' : '{ ... } (JSON)';
      el = area;
    } else {
      const text = document.createElement('input');
      text.type = 'text';
      if (k === 'integer' || k === 'number') text.inputMode = 'numeric';
      if (name === 'timestamp' && k === 'integer') text.value = String(Date.now());
      el = text;
    }
    el.name = name;
    el.dataset.kind = k;
    label.append(el);
    if (s.description) {
      const d = document.createElement('small');
      d.textContent = s.description;
      label.append(d);
    }
    container.append(label);
    readers.push({ name, el, k, s, required: required.has(name) });
  }
  if (assigned.size > 0) {
    const note = document.createElement('p');
    note.className = 'assigned';
    note.textContent = `Assigned by the server (readOnly): ${[...assigned].join(', ')}`;
    container.append(note);
  }
  return () => {
    const value: InputValue = { type };
    const errors: string[] = [];
    for (const { name, el, k, required: req } of readers) {
      let v: unknown;
      if (k === 'boolean') v = (el as HTMLInputElement).checked;
      else if (el.value.trim() === '') {
        if (req) errors.push(`/${name}: required`);
        continue;
      } else if (k === 'integer' || k === 'number') {
        v = Number(el.value.trim());
        if (!Number.isFinite(v as number)) { errors.push(`/${name}: expected a number, got ${JSON.stringify(el.value)}`); continue; }
      } else if (k === 'object' || k === 'array' || k === 'json') {
        try { v = JSON.parse(el.value); } catch (e) { errors.push(`/${name}: not JSON: ${(e as Error).message}`); continue; }
      } else v = el.value;
      value[name] = v;
    }
    if (errors.length === 0) errors.push(...validate(doc, schema, value, ''));
    return { value, errors };
  };
}

// validate returns the errors of value against schema s, as "path: rule".
export function validate(doc: SchemaDoc, schema: Schema | undefined, value: unknown, path: string): string[] {
  const s = resolve(doc, schema);
  const errs: string[] = [];
  const at = path || '/';
  const k = kind(s);
  const nullable = Array.isArray(s.type) && s.type.includes('null');
  if (value === null && nullable) return errs;
  if (s.const !== undefined) {
    if (value !== s.const) errs.push(`${at}: must be ${JSON.stringify(s.const)}`);
    return errs;
  }
  if (s.enum) {
    if (!s.enum.includes(value as string)) errs.push(`${at}: must be one of ${s.enum.join(', ')}`);
    return errs;
  }
  switch (k) {
    case 'string':
      if (typeof value !== 'string') { errs.push(`${at}: expected a string`); break; }
      if (s.minLength !== undefined && [...value].length < s.minLength) errs.push(`${at}: shorter than ${s.minLength}`);
      if (s.maxLength !== undefined && [...value].length > s.maxLength) errs.push(`${at}: longer than ${s.maxLength}`);
      if (s.pattern && !new RegExp(s.pattern, 'u').test(value)) errs.push(`${at}: does not match ${s.pattern}`);
      break;
    case 'integer':
    case 'number':
      if (typeof value !== 'number' || (k === 'integer' && !Number.isInteger(value))) { errs.push(`${at}: expected ${k === 'integer' ? 'an integer' : 'a number'}`); break; }
      if (s.minimum !== undefined && value < s.minimum) errs.push(`${at}: less than ${s.minimum}`);
      if (s.maximum !== undefined && value > s.maximum) errs.push(`${at}: more than ${s.maximum}`);
      if (s.exclusiveMinimum !== undefined && value <= s.exclusiveMinimum) errs.push(`${at}: not more than ${s.exclusiveMinimum}`);
      if (s.exclusiveMaximum !== undefined && value >= s.exclusiveMaximum) errs.push(`${at}: not less than ${s.exclusiveMaximum}`);
      break;
    case 'boolean':
      if (typeof value !== 'boolean') errs.push(`${at}: expected a boolean`);
      break;
    case 'array':
      if (!Array.isArray(value)) { errs.push(`${at}: expected an array`); break; }
      if (s.minItems !== undefined && value.length < s.minItems) errs.push(`${at}: fewer than ${s.minItems} items`);
      if (s.maxItems !== undefined && value.length > s.maxItems) errs.push(`${at}: more than ${s.maxItems} items`);
      if (s.items) value.forEach((v: unknown, i: number) => errs.push(...validate(doc, s.items, v, `${path}/${i}`)));
      break;
    case 'object':
      if (typeof value !== 'object' || value === null || Array.isArray(value)) { errs.push(`${at}: expected an object`); break; }
      for (const r of s.required || []) if (!(r in value)) errs.push(`${path}/${r}: required`);
      for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
        if (s.properties && key in s.properties) errs.push(...validate(doc, s.properties[key], v, `${path}/${key}`));
        else if (s.additionalProperties && typeof s.additionalProperties === 'object') errs.push(...validate(doc, s.additionalProperties, v, `${path}/${key}`));
        else if (s.additionalProperties === false) errs.push(`${path}/${key}: not a property of this input`);
      }
      break;
  }
  return errs;
}
