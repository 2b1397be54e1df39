//! The API's OpenAPI document as 3.1: poem-openapi writes 3.0.0, and the few places where 3.1
//! (JSON Schema 2020-12) says the same thing differently are rewritten here.

use serde_json::{Map, Value, json};

/// The version the served document declares.
pub const OPENAPI_VERSION: &str = "3.1.0";

/// `document` (OpenAPI 3.0) rewritten as OpenAPI 3.1.
pub fn upgrade(mut document: Value) -> Value {
    if let Some(root) = document.as_object_mut() {
        root.insert("openapi".into(), json!(OPENAPI_VERSION));
    }
    rewrite(&mut document);
    document
}

/// Rewrites every schema object below `value`, depth first.
fn rewrite(value: &mut Value) {
    match value {
        Value::Object(object) => {
            for child in object.values_mut() {
                rewrite(child);
            }
            nullable_as_type(object);
            exclusive_bounds_as_numbers(object, "exclusiveMinimum", "minimum");
            exclusive_bounds_as_numbers(object, "exclusiveMaximum", "maximum");
            binary_as_media_type(object);
        }
        Value::Array(items) => items.iter_mut().for_each(rewrite),
        _ => {}
    }
}

/// `nullable: true` → `"null"` among the types (3.1 has no `nullable`).
fn nullable_as_type(object: &mut Map<String, Value>) {
    let Some(nullable) = object.remove("nullable") else { return };
    if nullable != Value::Bool(true) {
        return;
    }
    match object.get_mut("type") {
        Some(Value::String(ty)) => {
            let ty = std::mem::take(ty);
            object.insert("type".into(), json!([ty, "null"]));
        }
        Some(Value::Array(types)) if !types.contains(&json!("null")) => types.push(json!("null")),
        Some(_) => {}
        // A reference or a composition: null is one more choice.
        None => {
            let schema = Value::Object(std::mem::take(object));
            object.insert("anyOf".into(), json!([schema, { "type": "null" }]));
        }
    }
}

/// `exclusiveMinimum: true` beside `minimum: n` → `exclusiveMinimum: n` (a number in 3.1).
fn exclusive_bounds_as_numbers(object: &mut Map<String, Value>, exclusive: &str, bound: &str) {
    match object.get(exclusive) {
        Some(Value::Bool(true)) => {
            if let Some(limit) = object.remove(bound) {
                object.insert(exclusive.into(), limit);
            } else {
                object.remove(exclusive);
            }
        }
        Some(Value::Bool(false)) => {
            object.remove(exclusive);
        }
        _ => {}
    }
}

/// `format: binary` → `contentMediaType` (3.1 describes raw bytes by their media type).
fn binary_as_media_type(object: &mut Map<String, Value>) {
    if object.get("type") == Some(&json!("string")) && object.get("format") == Some(&json!("binary")) {
        object.remove("format");
        object.insert("contentMediaType".into(), json!("application/octet-stream"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_declares_3_1() {
        assert_eq!(upgrade(json!({ "openapi": "3.0.0" }))["openapi"], "3.1.0");
    }

    #[test]
    fn nullable_becomes_a_type_array_with_null() {
        let upgraded = upgrade(json!({ "a": { "type": "string", "nullable": true, "format": "email" } }));
        assert_eq!(upgraded["a"], json!({ "type": ["string", "null"], "format": "email" }));
        let reference = upgrade(json!({ "b": { "$ref": "#/components/schemas/X", "nullable": true } }));
        assert_eq!(reference["b"], json!({ "anyOf": [{ "$ref": "#/components/schemas/X" }, { "type": "null" }] }));
        let not_nullable = upgrade(json!({ "c": { "type": "integer", "nullable": false } }));
        assert_eq!(not_nullable["c"], json!({ "type": "integer" }));
    }

    #[test]
    fn exclusive_bounds_become_numbers() {
        let upgraded = upgrade(json!({ "n": { "type": "integer", "minimum": 0, "exclusiveMinimum": true,
                                             "maximum": 10, "exclusiveMaximum": false } }));
        assert_eq!(upgraded["n"], json!({ "type": "integer", "exclusiveMinimum": 0, "maximum": 10 }));
    }

    #[test]
    fn binary_strings_name_their_media_type() {
        let upgraded = upgrade(json!({ "items": [{ "type": "string", "format": "binary" }] }));
        assert_eq!(upgraded["items"][0], json!({ "type": "string", "contentMediaType": "application/octet-stream" }));
    }
}
