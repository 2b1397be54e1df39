//! The API's OpenAPI document: served as 3.1, valid by `openapi-spec-validator`, and the live
//! API, on both backends with a real token, conforming to it under Schemathesis (no server error
//! for any input; every status, content type and body the document's). The two tools come from
//! the venv scripts/test installs and names in `WATASU_API_TOOLS`.

use std::{path::PathBuf, process::Command, time::Duration};

use crate::{
    api_tokens::token_from_page,
    both_backends,
    support::{Backend, Browser, TestApp},
};

/// The longest Schemathesis waits for one answer, and for its whole run.
const REQUEST_DEADLINE: Duration = Duration::from_secs(30);
const RUN_DEADLINE: Duration = Duration::from_secs(900);

/// The folder holding `openapi-spec-validator` and `schemathesis`.
fn api_tools() -> PathBuf {
    let dir = std::env::var_os("WATASU_API_TOOLS")
        .expect("WATASU_API_TOOLS names the venv's bin folder with openapi-spec-validator and schemathesis (scripts/test installs it)");
    PathBuf::from(dir)
}

async fn the_document_is_valid_openapi_3_1_and_the_live_api_conforms_to_it(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let served = Browser::new(&app.base).get("/api/v1/openapi.json").await;
    assert_eq!(served.status, 200, "{}", served.body);
    let document: serde_json::Value = serde_json::from_str(&served.body).unwrap();
    assert_eq!(document["openapi"], "3.1.0");
    assert!(!served.body.contains("\"nullable\""), "a 3.0 keyword is left in the 3.1 document");
    let create = &document["paths"]["/handovers"]["post"];
    assert!(create["responses"]["422"]["content"]["application/problem+json"].is_object(), "{create}");
    let form = &create["requestBody"]["content"]["multipart/form-data"]["schema"];
    assert_eq!(form["properties"]["file"]["items"]["contentMediaType"], "application/octet-stream", "{create}");
    assert!(create["requestBody"]["content"]["application/json; charset=utf-8"].is_object(), "{create}");
    let file = &document["paths"]["/requests/{id}/files/{position}"]["get"]["responses"];
    assert!(file["200"]["content"]["application/octet-stream"].is_object(), "{file}");
    assert!(file["206"]["headers"]["Content-Range"].is_object(), "{file}");
    let zip = &document["paths"]["/requests/{id}/zip"]["get"]["responses"];
    assert!(zip["200"]["content"]["application/zip"].is_object(), "{zip}");

    let reference = Browser::new(&app.base).get("/api/v1/docs").await;
    assert_eq!(reference.status, 200, "{}", reference.body);
    let operations: usize = document["paths"].as_object().unwrap().values().map(|m| m.as_object().unwrap().len()).sum();
    let listed = reference.texts("[data-operation] h2");
    assert_eq!(listed.len(), operations, "{listed:?}");
    assert!(listed.contains(&"POST /api/v1/handovers".to_owned()), "{listed:?}");

    let file = app.data_dir.path().join("openapi.json");
    std::fs::write(&file, &served.body).unwrap();
    let validated = Command::new(api_tools().join("openapi-spec-validator")).arg(&file).output().unwrap();
    assert!(
        validated.status.success(),
        "{}{}",
        String::from_utf8_lossy(&validated.stdout),
        String::from_utf8_lossy(&validated.stderr)
    );

    let browser = app.signed_in_sender("sato@example.test").await;
    let token = token_from_page(
        &browser,
        &["shares:read", "shares:write", "requests:read", "requests:write", "webhooks:read", "webhooks:write"],
    )
    .await;
    let checks = "not_a_server_error,response_schema_conformance,status_code_conformance,content_type_conformance";
    let run = tokio::process::Command::new(api_tools().join("schemathesis"))
        .args(["run", &format!("{}/api/v1/openapi.json", app.base), "--checks", checks])
        .args(["--header", &format!("Authorization: Bearer {token}")])
        .args(["--phases", "examples,coverage,fuzzing", "--max-examples", "25", "--workers", "1"])
        .args(["--generation-deterministic", "--no-color"])
        // A request the server never answers fails that request, and a run that never ends fails
        // the test (killing the run), instead of holding the suite.
        .args(["--request-timeout", &REQUEST_DEADLINE.as_secs().to_string()])
        .env("SCHEMATHESIS_HOOKS", "")
        // Its cache of crashes goes with the test's folder, not into the repository.
        .current_dir(app.data_dir.path())
        .kill_on_drop(true)
        .output();
    let run = tokio::time::timeout(RUN_DEADLINE, run)
        .await
        .unwrap_or_else(|_| panic!("schemathesis did not finish within {RUN_DEADLINE:?}"))
        .unwrap();
    let output = format!("{}{}", String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    assert!(run.status.success(), "schemathesis found the API apart from its document:\n{output}");
}

both_backends!(the_document_is_valid_openapi_3_1_and_the_live_api_conforms_to_it);
