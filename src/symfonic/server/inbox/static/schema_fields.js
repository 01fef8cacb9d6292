// Form fields built from a JSON Schema, each with a label and its own error line.
//
// Covers what an answer schema uses: strings (pattern, length, format-free),
// numbers and integers (bounds), booleans, enums, required fields, nested
// objects, arrays of any of these, and pydantic's $ref/$defs and Optional
// (anyOf with null). Anything else is edited as JSON text. Each field's read()
// returns {value, ok}: it checks the input and writes the problem next to the
// field before anything is sent; the service checks the answer again.

let nextId = 0;
const uid = (stem) => `${stem}-${++nextId}`;

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === false || value === null || value === undefined) continue;
    if (name === "text") node.textContent = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

export function resolve(schema, root) {
  let current = schema || {};
  for (let hops = 0; current.$ref && hops < 32; hops++) {
    const path = current.$ref.replace(/^#\//, "").split("/");
    let target = root;
    for (const part of path) target = target ? target[part] : undefined;
    current = { ...(target || {}), ...current, $ref: undefined };
  }
  const options = current.anyOf || current.oneOf;
  if (options && !current.type) {
    const real = options.filter((option) => option.type !== "null");
    if (real.length === 1) {
      return { ...resolve(real[0], root), title: current.title || real[0].title,
               description: current.description, default: current.default, nullable: true };
    }
  }
  return current;
}

const typeOf = (schema) => {
  if (Array.isArray(schema.enum)) return "enum";
  if ("const" in schema) return "const";
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type;
  if (type) return type;
  if (schema.properties) return "object";
  return "json";
};

const words = (name) => String(name).replace(/[_-]+/g, " ").replace(/^\w/, (c) => c.toUpperCase());

function errorLine(id) {
  return el("p", { id, class: "field-error", hidden: true });
}

function report(input, line, message) {
  line.textContent = message || "";
  line.hidden = !message;
  if (input) input.setAttribute("aria-invalid", message ? "true" : "false");
  return !message;
}

function wrap(label, control, hint, line, inline = false) {
  return el("div", { class: inline ? "field field-inline" : "field" }, ...(inline
    ? [control, label, hint, line] : [label, hint, control, line]));
}

function scalarField(schema, type, labelText, required, value) {
  const id = uid("field");
  const errorId = `${id}-error`;
  const hintText = schema.description && schema.description !== labelText ? schema.description : "";
  const hint = hintText ? el("p", { class: "hint", id: `${id}-hint`, text: hintText }) : null;
  const line = errorLine(errorId);
  const describedBy = [hint ? `${id}-hint` : null, errorId].filter(Boolean).join(" ");
  const label = el("label", { for: id, text: labelText + (required ? "" : " (optional)") });

  if (type === "boolean") {
    const box = el("input", { id, type: "checkbox", "aria-describedby": describedBy });
    box.checked = value === true || (value === undefined && schema.default === true);
    return { element: wrap(label, box, hint, line, true), focus: () => box.focus(),
             read: () => ({ ok: true, value: box.checked }) };
  }
  if (type === "enum") {
    const select = el("select", { id, "aria-describedby": describedBy });
    select.append(el("option", { value: "", text: required ? "Choose…" : "—" }));
    schema.enum.forEach((option, index) => {
      const opt = el("option", { value: String(index), text: String(option) });
      if (value !== undefined ? option === value : option === schema.default) opt.selected = true;
      select.append(opt);
    });
    return {
      element: wrap(label, select, hint, line), focus: () => select.focus(),
      read: () => {
        if (select.value === "") {
          return { ok: report(select, line, required ? "Choose one of the options." : ""),
                   value: undefined };
        }
        report(select, line, "");
        return { ok: true, value: schema.enum[Number(select.value)] };
      },
    };
  }
  const numeric = type === "number" || type === "integer";
  const long = type === "json" || (type === "string" && !schema.maxLength && !schema.pattern
    && !schema.enum && labelText.length < 40 && /comment|note|text|message|answer|description/i.test(labelText));
  const input = long
    ? el("textarea", { id, rows: type === "json" ? 4 : 3, "aria-describedby": describedBy })
    : el("input", { id, type: numeric ? "number" : "text", "aria-describedby": describedBy,
                    step: type === "integer" ? "1" : numeric ? "any" : null,
                    inputmode: type === "integer" ? "numeric" : numeric ? "decimal" : null });
  const initial = value !== undefined ? value : schema.default;
  if (initial !== undefined && initial !== null) {
    input.value = type === "json" ? JSON.stringify(initial, null, 2) : String(initial);
  }
  if (required) input.setAttribute("aria-required", "true");
  const check = () => {
    const raw = input.value;
    if (raw.trim() === "" && !(type === "string" && raw !== "")) {
      if (required) return [false, "This field is required.", undefined];
      return [true, "", undefined];
    }
    if (type === "json") {
      try { return [true, "", JSON.parse(raw)]; } catch { return [false, "Enter valid JSON.", undefined]; }
    }
    if (numeric) {
      const number = Number(raw);
      if (!Number.isFinite(number)) return [false, "Enter a number.", undefined];
      if (type === "integer" && !Number.isInteger(number)) return [false, "Enter a whole number.", undefined];
      if (schema.minimum !== undefined && number < schema.minimum) return [false, `Enter ${schema.minimum} or more.`, undefined];
      if (schema.maximum !== undefined && number > schema.maximum) return [false, `Enter ${schema.maximum} or less.`, undefined];
      if (schema.exclusiveMinimum !== undefined && number <= schema.exclusiveMinimum) return [false, `Enter more than ${schema.exclusiveMinimum}.`, undefined];
      if (schema.exclusiveMaximum !== undefined && number >= schema.exclusiveMaximum) return [false, `Enter less than ${schema.exclusiveMaximum}.`, undefined];
      return [true, "", number];
    }
    if (schema.minLength !== undefined && raw.length < schema.minLength) return [false, `Enter at least ${schema.minLength} characters.`, undefined];
    if (schema.maxLength !== undefined && raw.length > schema.maxLength) return [false, `Enter at most ${schema.maxLength} characters.`, undefined];
    if (schema.pattern !== undefined && !new RegExp(schema.pattern, "u").test(raw)) {
      return [false, `This does not have the expected form (${schema.pattern}).`, undefined];
    }
    return [true, "", raw];
  };
  return {
    element: wrap(label, input, hint, line), focus: () => input.focus(),
    read: () => {
      const [ok, message, parsed] = check();
      report(input, line, message);
      return { ok, value: parsed };
    },
  };
}

function objectField(schema, root, labelText, value, isRoot) {
  const required = new Set(schema.required || []);
  const fieldset = el("fieldset", { class: isRoot ? "object root" : "object" });
  if (!isRoot || labelText) fieldset.append(el("legend", { text: labelText }));
  const children = Object.entries(schema.properties || {}).map(([name, child]) => {
    const resolved = resolve(child, root);
    const field = fieldFor(resolved, root, resolved.title || words(name), required.has(name),
                           value && typeof value === "object" ? value[name] : undefined);
    fieldset.append(field.element);
    return [name, field];
  });
  return {
    element: fieldset,
    focus: () => children[0] && children[0][1].focus(),
    read: () => {
      let ok = true;
      const out = {};
      for (const [name, field] of children) {
        const result = field.read();
        ok = ok && result.ok;
        if (result.value !== undefined) out[name] = result.value;
      }
      return { ok, value: out, firstInvalid: children.find(([, f]) => f.lastOk === false) };
    },
  };
}

function arrayField(schema, root, labelText, value) {
  const itemSchema = resolve(schema.items || {}, root);
  const fieldset = el("fieldset", { class: "array" }, el("legend", { text: labelText }));
  const list = el("ol", { class: "items" });
  const line = errorLine(uid("array-error"));
  const items = [];
  const add = (initial) => {
    const field = fieldFor(itemSchema, root, `${itemSchema.title || "Item"} ${items.length + 1}`, true, initial);
    const row = el("li", {}, field.element);
    const entry = { field, row };
    row.append(el("button", { type: "button", class: "secondary",
      text: `Remove ${itemSchema.title || "item"} ${items.length + 1}`,
      onclick: () => { items.splice(items.indexOf(entry), 1); row.remove(); } }));
    items.push(entry);
    list.append(row);
    return field;
  };
  (Array.isArray(value) ? value : []).forEach(add);
  fieldset.append(list, el("button", { type: "button", class: "secondary",
    text: `Add ${(itemSchema.title || "item").toLowerCase()} to ${labelText.toLowerCase()}`,
    onclick: () => add(undefined).focus() }), line);
  return {
    element: fieldset,
    focus: () => (items[0] ? items[0].field.focus() : fieldset.querySelector("button").focus()),
    read: () => {
      const results = items.map((entry) => entry.field.read());
      let message = "";
      if (schema.minItems !== undefined && items.length < schema.minItems) message = `Add at least ${schema.minItems}.`;
      if (schema.maxItems !== undefined && items.length > schema.maxItems) message = `Keep at most ${schema.maxItems}.`;
      report(null, line, message);
      return { ok: !message && results.every((r) => r.ok), value: results.map((r) => r.value) };
    },
  };
}

// One field for `schema`; `read()` also remembers whether it passed, so the
// form can move the focus to the first field that did not.
export function fieldFor(schema, root, labelText, required, value, isRoot = false) {
  const type = typeOf(schema);
  let field;
  if (type === "object" && schema.properties) field = objectField(schema, root, labelText, value, isRoot);
  else if (type === "array") field = arrayField(schema, root, labelText, value);
  else if (type === "const") field = { element: null, focus: () => {}, read: () => ({ ok: true, value: schema.const }) };
  else if (["string", "number", "integer", "boolean", "enum"].includes(type)) {
    field = scalarField(schema, type, labelText, required, value);
  } else field = scalarField(schema, "json", labelText, required, value);
  const read = field.read;
  field.read = () => {
    const result = read();
    field.lastOk = result.ok;
    return result;
  };
  return field;
}

// The first focusable field inside `container` marked invalid.
export function focusFirstInvalid(container) {
  const bad = container.querySelector('[aria-invalid="true"]');
  if (bad) bad.focus();
  return Boolean(bad);
}
