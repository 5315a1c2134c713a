//! Whether a message deputy sends fits the schema Codex's generated clients are built
//! from: deputy's schema is walked beside Codex's, and every difference a client would
//! trip on is named with its path.
//!
//! What deputy sends (request results, notifications, its own requests) must carry every
//! field Codex marks required, never `null` where Codex does not allow it, only enum
//! values and union variants Codex knows, and types Codex accepts. What deputy receives
//! (request params, answers to its requests) must not require a field Codex's clients
//! may leave out.

use serde_json::{Map, Value};

/// A JSON Schema document whose `$ref`s are resolved against itself.
pub struct Doc<'a> {
    root: &'a Value,
}

impl<'a> Doc<'a> {
    /// A document; its references are JSON pointers into `root`.
    pub fn new(root: &'a Value) -> Self {
        Self { root }
    }

    /// `schema` with references and single-entry `allOf`s followed.
    fn resolve(&self, schema: &'a Value) -> &'a Value {
        let mut schema = schema;
        for _ in 0..64 {
            if let Some(pointer) = schema.get("$ref").and_then(Value::as_str) {
                match self.root.pointer(pointer.trim_start_matches('#')) {
                    Some(target) => schema = target,
                    None => return schema,
                }
            } else if let Some([only]) = schema
                .get("allOf")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
            {
                schema = only;
            } else {
                break;
            }
        }
        schema
    }

    /// The alternatives `schema` allows besides `null`, and whether it allows `null`.
    fn alternatives(&self, schema: &'a Value) -> (Vec<Value>, bool) {
        let schema = self.resolve(schema);
        let union = schema
            .get("anyOf")
            .or_else(|| schema.get("oneOf"))
            .and_then(Value::as_array);
        if let Some(branches) = union {
            let mut out = Vec::new();
            let mut nullable = false;
            for branch in branches {
                let (inner, inner_nullable) = self.alternatives(branch);
                nullable |= inner_nullable;
                // An object whose own fields sit beside its union (`{"properties": …,
                // "oneOf": […]}`) has them in every branch.
                out.extend(
                    inner
                        .into_iter()
                        .map(|branch| with_shared_fields(schema, branch)),
                );
            }
            return (out, nullable);
        }
        match schema.get("type") {
            Some(Value::String(t)) if t == "null" => (Vec::new(), true),
            Some(Value::Array(types)) if types.iter().any(|t| t == "null") => {
                let mut copy = schema.clone();
                let rest: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
                copy["type"] = match rest.as_slice() {
                    [one] => one.clone(),
                    _ => Value::Array(rest),
                };
                (vec![copy], true)
            }
            _ => (vec![schema.clone()], false),
        }
    }
}

/// Which way a message goes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// deputy sends it: Codex's clients read it.
    Out,
    /// deputy reads it: Codex's clients send it.
    In,
}

/// Compares deputy's `ours` with Codex's `theirs`, appending each problem to `problems`.
pub fn compare(
    codex: &Doc<'_>,
    theirs: &Value,
    deputy: &Doc<'_>,
    ours: &Value,
    direction: Direction,
    path: &str,
    problems: &mut Vec<String>,
) {
    Walk {
        codex,
        deputy,
        direction,
        problems,
        depth: 0,
    }
    .value(theirs, ours, path);
}

struct Walk<'d, 'a, 'p> {
    codex: &'d Doc<'a>,
    deputy: &'d Doc<'a>,
    direction: Direction,
    problems: &'p mut Vec<String>,
    depth: usize,
}

impl Walk<'_, '_, '_> {
    fn problem(&mut self, path: &str, what: String) {
        self.problems.push(format!("{path}: {what}"));
    }

    fn value(&mut self, theirs: &Value, ours: &Value, path: &str) {
        // Recursive types (items inside items) are followed a few levels only.
        if self.depth > 24 {
            return;
        }
        self.depth += 1;
        let (their_branches, their_null) = self.codex.alternatives(theirs);
        let (our_branches, our_null) = self.deputy.alternatives(ours);
        if self.direction == Direction::Out && our_null && !their_null {
            self.problem(
                path,
                "deputy may send null; Codex's schema does not allow it".into(),
            );
        }
        if self.direction == Direction::Out {
            for ours in &our_branches {
                let path = match tag(ours) {
                    Some((_, Value::String(variant))) if our_branches.len() > 1 => {
                        format!("{path}<{variant}>")
                    }
                    Some((variant, Value::Null)) if our_branches.len() > 1 => {
                        format!("{path}<{variant}>")
                    }
                    _ => path.to_string(),
                };
                let path = path.as_str();
                match matching_branch(&their_branches, ours) {
                    Some(theirs) => self.shape(&theirs, ours, path),
                    None => self.problem(
                        path,
                        format!(
                            "deputy may send {}, which Codex's schema does not allow",
                            describe(ours)
                        ),
                    ),
                }
            }
        } else if let ([theirs], [ours]) = (their_branches.as_slice(), our_branches.as_slice()) {
            self.shape(theirs, ours, path);
        }
        self.depth -= 1;
    }

    /// Two alternatives of the same kind: enum values, types, object fields, array items.
    fn shape(&mut self, theirs: &Value, ours: &Value, path: &str) {
        if let (Some(their_values), Some(our_values)) = (enum_values(theirs), enum_values(ours)) {
            if self.direction == Direction::Out {
                for value in our_values.iter().filter(|v| !their_values.contains(v)) {
                    self.problem(path, format!("deputy may send {value}, unknown to Codex"));
                }
            }
            return;
        }
        let their_types = types(theirs);
        let our_types = types(ours);
        if self.direction == Direction::Out
            && !their_types.is_empty()
            && let Some(wrong) = our_types.iter().find(|t| !accepts(&their_types, t))
        {
            self.problem(
                path,
                format!("deputy sends a {wrong}, Codex expects {their_types:?}"),
            );
            return;
        }
        if let (Some(their_fields), Some(our_fields)) = (properties(theirs), properties(ours)) {
            self.object(theirs, their_fields, ours, our_fields, path);
        }
        if let (Some(their_items), Some(our_items)) = (theirs.get("items"), ours.get("items")) {
            self.value(their_items, our_items, &format!("{path}[]"));
        }
    }

    fn object(
        &mut self,
        theirs: &Value,
        their_fields: &Map<String, Value>,
        ours: &Value,
        our_fields: &Map<String, Value>,
        path: &str,
    ) {
        let their_required = required(theirs);
        let our_required = required(ours);
        match self.direction {
            Direction::Out => {
                for field in &their_required {
                    let Some(ours) = our_fields.get(field) else {
                        self.problem(
                            &format!("{path}.{field}"),
                            "required by Codex, missing".into(),
                        );
                        continue;
                    };
                    // An optional field of ours is still always sent when it is nullable
                    // (serialized as null); otherwise it may be left out.
                    let sent_always =
                        our_required.contains(field) || self.deputy.alternatives(ours).1;
                    if !sent_always {
                        self.problem(
                            &format!("{path}.{field}"),
                            "required by Codex, optional in deputy".into(),
                        );
                    }
                }
            }
            Direction::In => {
                for field in our_required.iter().filter(|f| !their_required.contains(f)) {
                    self.problem(
                        &format!("{path}.{field}"),
                        "deputy requires it; Codex's clients may leave it out".into(),
                    );
                }
            }
        }
        for (field, ours) in our_fields {
            let field_path = format!("{path}.{field}");
            match their_fields.get(field) {
                Some(theirs) => self.value(theirs, ours, &field_path),
                None if self.direction == Direction::Out => self.problem(
                    &field_path,
                    "deputy-only field, not in Codex's schema".into(),
                ),
                None => {}
            }
        }
    }
}

/// The alternative of `theirs` that describes the same thing as `ours`: the variant with
/// the same tag, the enum holding its values, or the one of the same type.
fn matching_branch(theirs: &[Value], ours: &Value) -> Option<Value> {
    if let Some(tag) = tag(ours) {
        return theirs
            .iter()
            .find(|t| self::tag(t).as_ref() == Some(&tag))
            .cloned();
    }
    if let Some(values) = enum_values(ours) {
        // Codex may spread one enum over several alternatives: merge them.
        let known: Vec<Value> = theirs.iter().filter_map(enum_values).flatten().collect();
        let all_known = values.iter().all(|v| known.contains(v));
        return (!known.is_empty()).then(|| {
            if all_known {
                serde_json::json!({"enum": values})
            } else {
                serde_json::json!({"enum": known})
            }
        });
    }
    let our_types = types(ours);
    theirs
        .iter()
        .filter(|t| tag(t).is_none() && enum_values(t).is_none())
        .find(|t| our_types.iter().all(|ty| accepts(&types(t), ty)))
        .cloned()
}

/// How a variant of a tagged union names itself: a required field with one constant
/// value (`{"type": "idle"}`), or the one required field of an externally tagged
/// variant (`{"custom": …}`).
fn tag(schema: &Value) -> Option<(String, Value)> {
    let fields = properties(schema)?;
    let required = required(schema);
    for field in &required {
        if let Some(values) = fields.get(field).and_then(enum_values)
            && let [value] = values.as_slice()
        {
            return Some((field.clone(), value.clone()));
        }
    }
    match required.as_slice() {
        [only] if fields.len() == 1 => Some((only.clone(), Value::Null)),
        _ => None,
    }
}

/// `branch` with the fields and required names `parent` declares beside its union.
fn with_shared_fields(parent: &Value, mut branch: Value) -> Value {
    let Some(shared) = parent.get("properties").and_then(Value::as_object) else {
        return branch;
    };
    let Some(object) = branch.as_object_mut() else {
        return branch;
    };
    let fields = object
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(fields) = fields.as_object_mut() {
        for (name, schema) in shared {
            fields.entry(name.clone()).or_insert_with(|| schema.clone());
        }
    }
    let shared_required = parent.get("required").and_then(Value::as_array).cloned();
    if let Some(names) = shared_required {
        let required = object
            .entry("required")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Some(required) = required.as_array_mut() {
            for name in names {
                if !required.contains(&name) {
                    required.push(name);
                }
            }
        }
    }
    branch
}

fn enum_values(schema: &Value) -> Option<Vec<Value>> {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return Some(values.clone());
    }
    schema.get("const").map(|value| vec![value.clone()])
}

fn types(schema: &Value) -> Vec<String> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

fn accepts(theirs: &[String], ours: &str) -> bool {
    theirs
        .iter()
        .any(|t| t == ours || (t == "number" && ours == "integer"))
}

fn properties(schema: &Value) -> Option<&Map<String, Value>> {
    schema.get("properties").and_then(Value::as_object)
}

fn required(schema: &Value) -> Vec<String> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn describe(schema: &Value) -> String {
    if let Some((field, value)) = tag(schema) {
        return if value.is_null() {
            format!("the variant `{field}`")
        } else {
            format!("the variant {field}={value}")
        };
    }
    if let Some(values) = enum_values(schema) {
        return format!("{values:?}");
    }
    format!("a {:?}", types(schema))
}
