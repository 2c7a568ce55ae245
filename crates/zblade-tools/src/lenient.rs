//! Arguments the way models send them. Models often send a number as `"20"`, a list as the JSON
//! text `"[\"a\", \"b\"]"` or as `"a, b"`, and a line range as `"10-20"`; the schemas advertise
//! the proper types, and these deserializers accept the common misspellings of them too.

use serde::Deserialize;
use serde::de::{Deserializer, Error};
use serde_json::Value;

/// An optional non-negative integer: `20`, `20.0`, `"20"`, or `null`.
pub fn opt_u32<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(value) => integer(&value).map(Some).map_err(D::Error::custom),
    }
}

/// An optional list of strings: `["a", "b"]`, `"[\"a\", \"b\"]"`, `"a, b"`, `"a"`, or `null`.
pub fn string_list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .into_iter()
            .map(|item| match item {
                Value::String(s) => Ok(s),
                Value::Number(n) => Ok(n.to_string()),
                other => Err(D::Error::custom(format!("expected a string in the list, got {other}"))),
            })
            .collect(),
        Some(Value::String(text)) => {
            let trimmed = text.trim();
            if trimmed.starts_with('[') {
                return serde_json::from_str::<Vec<String>>(trimmed)
                    .map_err(|e| D::Error::custom(format!("a list given as JSON text did not parse: {e}")));
            }
            Ok(trimmed
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect())
        }
        Some(other) => Err(D::Error::custom(format!("expected a list of strings, got {other}"))),
    }
}

/// A list of objects, or the same list as JSON text.
pub fn object_list<'de, D: Deserializer<'de>, T: serde::de::DeserializeOwned>(d: D) -> Result<Vec<T>, D::Error> {
    let value = match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::String(text)) => serde_json::from_str(text.trim())
            .map_err(|e| D::Error::custom(format!("a list given as JSON text did not parse: {e}")))?,
        Some(value @ Value::Object(_)) => Value::Array(vec![value]),
        Some(value) => value,
    };
    serde_json::from_value(value).map_err(D::Error::custom)
}

/// A line range: `[10, 20]`, `"10-20"`, `"10:20"`, `"10,20"`, or one line `12` / `"12"`.
pub fn line_range<'de, D: Deserializer<'de>>(d: D) -> Result<Option<[u32; 2]>, D::Error> {
    let value = match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => return Ok(None),
        Some(value) => value,
    };
    let pair = match &value {
        Value::Array(items) if items.len() == 2 => [integer(&items[0]), integer(&items[1])],
        Value::Array(items) if items.len() == 1 => [integer(&items[0]), integer(&items[0])],
        Value::String(text) if text.trim().starts_with('[') => {
            let items: Vec<Value> = serde_json::from_str(text.trim()).map_err(D::Error::custom)?;
            match items.as_slice() {
                [a, b] => [integer(a), integer(b)],
                _ => return Err(D::Error::custom("a line range has two numbers: first and last line")),
            }
        }
        Value::String(text) => match text
            .split(['-', ':', ','])
            .map(str::trim)
            .collect::<Vec<_>>()
            .as_slice()
        {
            [one] => {
                let line = integer(&Value::from(*one));
                [line.clone(), line]
            }
            [a, b] => [integer(&Value::from(*a)), integer(&Value::from(*b))],
            _ => return Err(D::Error::custom(format!("{text:?} is not a line range like \"10-20\""))),
        },
        Value::Number(_) => [integer(&value), integer(&value)],
        other => {
            return Err(D::Error::custom(format!(
                "expected a line range like [10, 20], got {other}"
            )));
        }
    };
    let [a, b] = pair;
    Ok(Some([a.map_err(D::Error::custom)?, b.map_err(D::Error::custom)?]))
}

/// A whole number ≥ 0 from a JSON number or a string holding one.
fn integer(value: &Value) -> Result<u32, String> {
    let number = match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    match number {
        Some(n) if n.fract() == 0.0 && (0.0..=u32::MAX as f64).contains(&n) => Ok(n as u32),
        Some(n) => Err(format!("expected a whole number ≥ 0, got {n}")),
        None => Err(format!("expected a whole number, got {value}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Deserialize)]
    struct Args {
        #[serde(default, deserialize_with = "opt_u32")]
        limit: Option<u32>,
        #[serde(default, deserialize_with = "string_list")]
        tags: Vec<String>,
        #[serde(default, deserialize_with = "line_range")]
        lines: Option<[u32; 2]>,
    }

    fn parse(value: Value) -> Result<Args, serde_json::Error> {
        serde_json::from_value(value)
    }

    #[test]
    fn numbers_lists_and_ranges_arrive_in_many_shapes() {
        for limit in [json!(5), json!("5"), json!(5.0), json!(" 5 ")] {
            assert_eq!(parse(json!({ "limit": limit })).unwrap().limit, Some(5));
        }
        for tags in [json!(["a", "b"]), json!("[\"a\", \"b\"]"), json!("a, b")] {
            assert_eq!(parse(json!({ "tags": tags })).unwrap().tags, ["a", "b"]);
        }
        for lines in [
            json!([3, 9]),
            json!("3-9"),
            json!("[3, 9]"),
            json!(["3", "9"]),
            json!("3:9"),
        ] {
            assert_eq!(parse(json!({ "lines": lines })).unwrap().lines, Some([3, 9]));
        }
        assert_eq!(parse(json!({ "lines": 4 })).unwrap().lines, Some([4, 4]));
        assert_eq!(parse(json!({})).unwrap().limit, None);
    }

    #[test]
    fn nonsense_is_an_error_that_says_what_was_expected() {
        for (bad, expected) in [
            (json!({ "limit": "many" }), "whole number"),
            (json!({ "limit": -1 }), "≥ 0"),
            (json!({ "limit": 2.5 }), "≥ 0"),
            (json!({ "tags": { "a": 1 } }), "list of strings"),
            (json!({ "lines": "ten to twenty" }), "whole number"),
        ] {
            let err = parse(bad.clone())
                .err()
                .unwrap_or_else(|| panic!("{bad} was accepted"))
                .to_string();
            assert!(err.contains(expected), "{bad}: {err}");
        }
    }
}
