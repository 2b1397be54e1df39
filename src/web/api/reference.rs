//! The API's reference page at /api/v1/docs: rendered on the server from the same document
//! `openapi.json` serves, so it needs no script and cannot disagree with it.

use askama::Template;
use poem::{
    handler,
    web::{Data, Html},
};
use serde_json::Value;

use crate::web::{
    AppError, AppState,
    pages::{Chrome, render},
};

/// One operation as the page lists it.
pub struct OperationView {
    pub method: String,
    pub path: String,
    pub summary: String,
    /// The rest of its doc comment: the scope it needs, what it answers.
    pub description: String,
    pub statuses: Vec<String>,
}

#[derive(Template)]
#[template(path = "api/reference.html")]
struct ReferencePage {
    c: Chrome,
    operations: Vec<OperationView>,
}

/// The operations of `document`, in its order of paths.
pub fn operations(document: &Value) -> Vec<OperationView> {
    let mut operations = Vec::new();
    let Some(paths) = document["paths"].as_object() else { return operations };
    for (path, methods) in paths {
        let Some(methods) = methods.as_object() else { continue };
        for (method, operation) in methods {
            let text = |key: &str| operation[key].as_str().unwrap_or_default().to_owned();
            let statuses = operation["responses"].as_object().map(|r| r.keys().cloned().collect()).unwrap_or_default();
            operations.push(OperationView {
                method: method.to_uppercase(),
                path: path.clone(),
                summary: text("summary"),
                description: text("description"),
                statuses,
            });
        }
    }
    operations
}

/// GET /api/v1/docs
#[handler]
pub async fn reference(c: Chrome, state: Data<&AppState>) -> Result<Html<String>, AppError> {
    let document = super::openapi_document(&state.config);
    render(&ReferencePage { c, operations: operations(&document) })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn each_operation_is_listed_with_its_answers() {
        let document = json!({ "paths": { "/handovers": {
            "get": { "summary": "Lists", "responses": { "200": {}, "401": {} } } } } });
        let listed = super::operations(&document);
        assert_eq!(listed.len(), 1);
        assert_eq!((listed[0].method.as_str(), listed[0].path.as_str()), ("GET", "/handovers"));
        assert_eq!(listed[0].statuses, ["200", "401"]);
    }
}
