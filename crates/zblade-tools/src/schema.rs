//! The tools' JSON schemas, derived from their argument and result types and made as small as
//! they can be: every model that is offered the tools pays for them on every turn.

use serde_json::{Map, Value, json};

/// Which schema [`compact`] trims.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Side {
    Input,
    Output,
}

/// A schema as small as it can be without saying less to a model or a validator. Every agent
/// pays for `tools/list` in its context window on every turn, and schemars writes a lot: the
/// draft, titles, number formats, `null` alternatives, definitions behind `$ref`s, the
/// closed-object marker (unknown arguments are refused anyway, with the reason). Inputs
/// keep their field descriptions (that is how a model learns the arguments) and drop `null`
/// (an absent optional argument says the same); outputs keep only types and structure, `null`
/// included, because clients validate results against them.
pub(crate) fn compact(schema: &Map<String, Value>, side: Side) -> std::sync::Arc<Map<String, Value>> {
    let defs = schema
        .get("$defs")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut root = Value::Object(schema.clone());
    if let Value::Object(map) = &mut root {
        map.remove("description");
        map.remove("$defs"); // inlined below: each is used once per tool, a `$ref` costs more
    }
    trim(&mut root, side, &defs);
    match root {
        Value::Object(map) => std::sync::Arc::new(map),
        _ => unreachable!("a schema is an object"),
    }
}

fn trim(value: &mut Value, side: Side, defs: &Map<String, Value>) {
    match value {
        Value::Object(map) => {
            // Property names are data, not keywords: `title` may be a field.
            for key in ["properties", "$defs"] {
                if let Some(Value::Object(named)) = map.get_mut(key) {
                    named.values_mut().for_each(|schema| trim(schema, side, defs));
                }
            }
            for key in [
                "$schema",
                "title",
                "format",
                "minimum",
                "minItems",
                "maxItems",
                "additionalProperties",
            ] {
                map.remove(key);
            }
            if matches!(map.get("default"), Some(Value::Null)) || map.get("default") == Some(&json!([])) {
                map.remove("default");
            }
            if side == Side::Output {
                map.remove("description");
                map.remove("required");
            }
            if side == Side::Input {
                // `["integer", "null"]` → `"integer"`; `anyOf: [{$ref}, {type: null}]` → the ref.
                if let Some(Value::Array(types)) = map.get("type") {
                    let kept: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
                    if kept.len() == 1 {
                        let only = kept[0].clone();
                        map.insert("type".into(), only);
                    }
                }
                if let Some(Value::Array(options)) = map.get("anyOf") {
                    let kept: Vec<Value> = options
                        .iter()
                        .filter(|o| o.get("type") != Some(&json!("null")))
                        .cloned()
                        .collect();
                    if kept.len() == 1 {
                        map.remove("anyOf");
                        if let Value::Object(only) = &kept[0] {
                            map.extend(only.clone());
                        }
                    }
                }
            }
            // A domain enum whose variants carry docs comes as `oneOf` one `const` each, with
            // the variant's description: a plain `enum` of the names says the same in a tenth
            // of the tokens (the field's own description says what they mean).
            if let Some(names) = map.get("oneOf").and_then(Value::as_array).and_then(|options| {
                options
                    .iter()
                    .map(|o| o.get("const").filter(|c| c.is_string()).cloned())
                    .collect::<Option<Vec<Value>>>()
            }) {
                map.remove("oneOf");
                map.insert("type".into(), json!("string"));
                map.insert("enum".into(), Value::Array(names));
            }
            // Definitions are inlined: one less indirection for a model to follow, fewer tokens.
            if let Some(name) = map
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix("#/$defs/"))
                && let Some(Value::Object(def)) = defs.get(name)
            {
                let def = def.clone();
                map.remove("$ref");
                for (key, field) in def {
                    if key != "description" {
                        map.entry(key).or_insert(field);
                    }
                }
                trim(value, side, defs); // the inlined definition's own keywords
                return;
            }
            for (key, child) in map.iter_mut() {
                if key != "properties" && key != "$defs" {
                    trim(child, side, defs);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| trim(item, side, defs)),
        _ => {}
    }
}
