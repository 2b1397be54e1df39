//! Fault drills: the server killed with SIGKILL mid-download and mid-upload, PostgreSQL stopped and
//! started under traffic, the SMTP relay down, the file system full, and property-based hostile
//! input. Each drill breaks one thing for real and then checks the exact state left behind: rows,
//! files on disk, mails, and what people were answered.

mod database;
mod database_full;
mod disk_full;
mod hostile_props;
mod hung_relay;
mod killed;
mod smtp_down;
mod stopped;

use std::{
    path::Path,
    pin::Pin,
    task::{Context, Poll},
};
use watasu::on_db;

use bytes::Bytes;
use http_body::Frame;
use watasu::db::Db;

use crate::support::{Browser, TestApp, execute};
use watasu::db::Sql;

/// The password of the senders the drills sign in as.
pub use crate::support::{PASSWORD, eventually};

/// The bearer token of the drills' `/metrics`.
pub const METRICS_TOKEN: &str = "drill-metrics-token-5b1e0f1e2d3c4b5a69788796a5b4c3d2";

/// The value of the sample `name{labels…}` in a scrape of `/metrics` (`None`: no such sample).
pub async fn metric(app: &TestApp, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let page = app.browser().get_with("/metrics", &[("Authorization", &format!("Bearer {METRICS_TOKEN}"))]).await;
    assert_eq!(page.status, 200, "{}", page.body);
    page.body.lines().filter(|line| !line.starts_with('#')).find_map(|line| {
        let (series, value) = line.rsplit_once(' ')?;
        let (series_name, series_labels) = series.split_once('{').unwrap_or((series, "}"));
        let wanted = labels.iter().all(|(k, v)| series_labels.contains(&format!("{k}=\"{v}\"")));
        (series_name == name && wanted).then(|| value.parse().expect("a sample's value is a number"))
    })
}

/// Every row of a one-text-column query, in order.
pub async fn lines(db: &Db, sql: &'static str) -> Vec<String> {
    on_db!(db, |pool| sqlx::query_scalar(sql).fetch_all(pool).await.unwrap())
}

/// What a fault must not change behind anyone's back: the rows that carry promises.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DbState {
    pub users: Vec<String>,
    pub files: Vec<String>,
    pub shares: Vec<String>,
    pub events: Vec<String>,
    pub outbox: Vec<String>,
}

pub async fn db_state(db: &Db) -> DbState {
    DbState {
        users: lines(db, "SELECT CAST(id AS TEXT) || ' ' || email FROM users ORDER BY id").await,
        files: lines(
            db,
            "SELECT CAST(id AS TEXT) || ' ' || storage_key || ' ' || CAST(size_bytes AS TEXT) || ' purged:' || COALESCE(CAST(purged_at AS TEXT), '-') FROM files ORDER BY id",
        )
        .await,
        shares: lines(
            db,
            "SELECT CAST(id AS TEXT) || ' ' || CAST(handover_id AS TEXT) || ' ' || status || ' consumed:' \
             || COALESCE(CAST(consumed_at AS TEXT), '-') || ' purged:' || COALESCE(CAST(purged_at AS TEXT), '-') \
             || ' attempts:' || CAST(purge_attempts AS TEXT) FROM shares ORDER BY id",
        )
        .await,
        events: lines(
            db,
            "SELECT CAST(id AS TEXT) || ' ' || CAST(share_id AS TEXT) || ' ' || kind FROM share_events ORDER BY id",
        )
        .await,
        outbox: lines(
            db,
            "SELECT CAST(id AS TEXT) || ' ' || kind || ' ' || recipient || ' ' || status FROM mail_outbox ORDER BY id",
        )
        .await,
    }
}

/// The kinds of one share's events, in order.
pub async fn event_kinds(db: &Db, share_id: i64) -> Vec<String> {
    let all = lines(db, "SELECT CAST(share_id AS TEXT) || ' ' || kind FROM share_events ORDER BY id").await;
    let prefix = format!("{share_id} ");
    all.iter().filter_map(|line| line.strip_prefix(&prefix).map(str::to_owned)).collect()
}

/// A share's status.
pub async fn share_status(db: &Db, share_id: i64) -> String {
    let all = lines(db, "SELECT CAST(id AS TEXT) || ' ' || status FROM shares ORDER BY id").await;
    let prefix = format!("{share_id} ");
    all.iter().find_map(|line| line.strip_prefix(&prefix).map(str::to_owned)).expect("the share exists")
}

/// The entries of a folder: (name, size), sorted; nothing when it does not exist.
pub fn files_in(dir: &Path) -> Vec<(String, u64)> {
    let mut files: Vec<(String, u64)> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| (e.file_name().to_string_lossy().into_owned(), e.metadata().map(|m| m.len()).unwrap_or(0)))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

pub fn is_temp(name: &str) -> bool {
    name.starts_with(watasu::storage::store::TEMP_PREFIX)
}

/// Signs `browser` in as the sender `email` (with [`PASSWORD`]).
pub async fn sign_in(browser: &Browser, email: &str) {
    let answer = browser.sign_in(email, PASSWORD).await;
    assert_eq!(answer.status, 303, "signing in failed: {}", answer.body);
}

/// Lets the rate limiter forget earlier submissions: a drill sends more than a person would.
pub async fn forget_rate_limits(app: &TestApp) {
    let sql = "DELETE FROM rate_limit_hits WHERE id > $1";
    execute(app.db(), Sql::same(sql), 0).await;
}

/// The multipart boundary of the uploads the drills send.
pub const BOUNDARY: &str = "----watasu-fault-drill-5b1e";

/// The form fields of a new-share upload and the head of its file part; the file's bytes follow.
pub fn upload_head(csrf: &str, recipient: &str, file_name: &str) -> Vec<u8> {
    let mut head = String::new();
    for (name, value) in
        [("csrf_token", csrf), ("recipient", recipient), ("expires_in", "1d"), ("mail_lang", "en"), ("notify", "1")]
    {
        head.push_str(&format!("--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"));
    }
    head.push_str(&format!(
        "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{file_name}\"\r\n\
         Content-Type: application/octet-stream\r\n\r\n"
    ));
    head.into_bytes()
}

/// The end of an upload body after the file's bytes.
pub fn upload_tail() -> Vec<u8> {
    format!("\r\n--{BOUNDARY}--\r\n").into_bytes()
}

/// A whole upload body: fields, `content` as the file, closing boundary.
pub fn upload_body(csrf: &str, recipient: &str, file_name: &str, content: &[u8]) -> Vec<u8> {
    [upload_head(csrf, recipient, file_name), content.to_vec(), upload_tail()].concat()
}

/// A request body fed chunk by chunk from the test; it ends when the sender is dropped, and
/// otherwise just waits (a stalled upload).
pub struct ChannelBody(pub tokio::sync::mpsc::Receiver<Bytes>);

impl http_body::Body for ChannelBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        self.0.poll_recv(cx).map(|chunk| chunk.map(|bytes| Ok(Frame::data(bytes))))
    }
}

/// Posts an upload body to /shares/new as the signed-in `client` would.
pub fn upload_request(client: &reqwest::Client, base: &str, body: reqwest::Body) -> reqwest::RequestBuilder {
    client
        .post(format!("{base}/shares/new"))
        .header("Sec-Fetch-Site", "same-origin")
        .header("Content-Type", format!("multipart/form-data; boundary={BOUNDARY}"))
        .body(body)
}
