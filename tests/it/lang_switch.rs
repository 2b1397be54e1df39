//! The language switch links back to the page it is on, and only ever to this origin.

use scraper::{Html, Selector};

use crate::{
    both_backends,
    support::{Backend, TestApp, raw},
};

/// The hrefs of the language switch's links in a raw HTTP answer.
fn switch_hrefs(answer: &str) -> Vec<String> {
    let body = answer.split_once("\r\n\r\n").map(|(_, body)| body).unwrap_or_default();
    let selector = Selector::parse("nav.lang-switch a").unwrap();
    Html::parse_document(body).select(&selector).filter_map(|a| a.value().attr("href").map(str::to_owned)).collect()
}

async fn the_language_switch_on_a_path_that_looks_like_another_host_links_to_this_origin(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let base = url::Url::parse(&app.base).unwrap();
    for path in
        ["//evil.example/x", "/\\evil.example/", "/\\\\evil.example", "/%2F%2Fevil", "///evil.example/x", "/login"]
    {
        let answer = raw::get(app.addr, path).await;
        let hrefs = switch_hrefs(&answer);
        assert!(!hrefs.is_empty(), "{path}: no language switch in {answer}");
        for href in hrefs {
            assert!(href.starts_with('/'), "{path}: {href}");
            assert!(!href.starts_with("//") && !href.starts_with("/\\"), "{path}: {href}");
            let resolved = base.join(&href).unwrap();
            assert_eq!(resolved.origin(), base.origin(), "{path}: {href} leaves the origin");
        }
    }
}

both_backends!(the_language_switch_on_a_path_that_looks_like_another_host_links_to_this_origin);
