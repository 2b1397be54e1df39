//! Static files, embedded in the binary and served under a content version so they can be
//! cached for a year and still change with every release.

use poem::{
    Response, handler,
    http::{StatusCode, header},
    web::{Data, Path},
};
use sha2::{Digest, Sha256};

use super::AppState;

struct Asset {
    name: &'static str,
    content_type: &'static str,
    bytes: &'static [u8],
}

/// A file of `static/`, embedded under its own name.
macro_rules! asset {
    ($name:literal, $content_type:expr) => {
        Asset { name: $name, content_type: $content_type, bytes: include_bytes!(concat!("../../static/", $name)) }
    };
}

const JAVASCRIPT: &str = "text/javascript; charset=utf-8";

const ASSETS: [Asset; 7] = [
    asset!("app.css", "text/css; charset=utf-8"),
    asset!("app.js", JAVASCRIPT),
    asset!("htmx.min.js", JAVASCRIPT),
    // The passkey forms' script: loaded by the pages that have one.
    asset!("passkey.js", JAVASCRIPT),
    // The official tus client (tus-js-client 4.3.1, see static/tus.LICENSE) and the new-share
    // page's use of it: loaded by that page only.
    asset!("tus.min.js", JAVASCRIPT),
    asset!("upload.js", JAVASCRIPT),
    asset!("favicon.svg", "image/svg+xml"),
];

/// A short digest of every asset: changes whenever any of them changes.
pub fn assets_version() -> String {
    let mut hasher = Sha256::new();
    for asset in &ASSETS {
        hasher.update(asset.bytes);
    }
    hex::encode(&hasher.finalize()[..6])
}

#[handler]
pub fn serve_asset(Path((version, name)): Path<(String, String)>, state: Data<&AppState>) -> Response {
    let Some(asset) = ASSETS.iter().find(|a| a.name == name) else {
        return StatusCode::NOT_FOUND.into();
    };
    // An old version in the URL still gets today's file, but must not be cached as if it matched.
    let cache = if version == state.assets_version { "public, max-age=31536000, immutable" } else { "no-cache" };
    Response::builder()
        .header(header::CONTENT_TYPE, asset.content_type)
        .header(header::CACHE_CONTROL, cache)
        .body(asset.bytes)
}

/// GET /favicon.ico: what browsers and tools ask for without reading the page's `<link rel=icon>`.
/// Modern browsers take an SVG under this name too; a day's cache lets a new icon arrive.
#[handler]
pub fn favicon() -> Response {
    let icon = ASSETS.iter().find(|a| a.name == "favicon.svg").expect("the icon is embedded");
    Response::builder()
        .header(header::CONTENT_TYPE, icon.content_type)
        .header(header::CACHE_CONTROL, "public, max-age=86400")
        .body(icon.bytes)
}
