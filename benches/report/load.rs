//! Page load with wrk (64 connections), what it needs prepared in the database (returning
//! visitors' sessions, recipients with a code waiting), and sign-ins at a steady rate beside it.

use std::{
    path::Path,
    process::Command,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use watasu::{
    accounts::EmailAddress,
    db::Db,
    i18n::Lang,
    otp::Codes,
    secret::SecretKey,
    session::Sessions,
    share::{NewFile, NewHandover, ShareLinks, ShareRepository},
    storage::StoredFile,
};

/// The session cookie's name over plain HTTP.
pub const COOKIE: &str = "watasu_session";
const THREADS: u32 = 2;
const CONNECTIONS: u32 = 64;

/// What one wrk run measured.
#[derive(Clone, Copy, Debug, Default)]
pub struct WrkResult {
    pub requests: u64,
    pub rps: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// Connect, read, write and timeout errors, and answers with a status of 400 or more.
    pub errors: u64,
}

fn summary_field(line: &str, name: &str) -> u64 {
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("wrk printed no {name}: {line}"))
}

/// Runs wrk against `base` for `seconds` with one of the report's scripts and its arguments.
pub fn wrk(work: &Path, base: &str, script: &str, name: &str, args: &[&str], seconds: u64) -> WrkResult {
    let path = work.join(format!("{name}.lua"));
    std::fs::write(&path, format!("{script}\n{}", include_str!("summary.lua"))).unwrap();
    let output = Command::new("wrk")
        .args(["-t", &THREADS.to_string(), "-c", &CONNECTIONS.to_string(), "-d", &format!("{seconds}s")])
        .args(["--timeout", "10s", "-s", path.to_str().unwrap(), base, "--"])
        .args(args)
        .output()
        .expect("running wrk (apt-get install wrk)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "wrk failed: {stdout}{}", String::from_utf8_lossy(&output.stderr));
    let line = stdout.lines().find(|l| l.starts_with("WRK ")).unwrap_or_else(|| panic!("wrk printed: {stdout}"));
    let requests = summary_field(line, "requests");
    let errors = ["connect", "read", "write", "status", "timeout"].iter().map(|f| summary_field(line, f)).sum();
    WrkResult {
        requests,
        rps: requests as f64 / (summary_field(line, "duration_us") as f64 / 1e6),
        p50_ms: summary_field(line, "p50_us") as f64 / 1000.0,
        p99_ms: summary_field(line, "p99_us") as f64 / 1000.0,
        errors,
    }
}

/// The landing page of `token` for `seconds`, after a short warm-up run.
pub fn landing(work: &Path, base: &str, token: &str, cookies: &Path, seconds: u64, warmup: u64) -> WrkResult {
    page(work, base, &format!("/s/{token}"), cookies, seconds, warmup)
}

/// GETs of `path` for `seconds` with the prepared cookies, after a short warm-up run.
pub fn page(work: &Path, base: &str, path: &str, cookies: &Path, seconds: u64, warmup: u64) -> WrkResult {
    let args = [path, cookies.to_str().unwrap()];
    let script = include_str!("landing.lua");
    if warmup > 0 {
        wrk(work, base, script, "page-warmup", &args, warmup);
    }
    wrk(work, base, script, "page", &args, seconds)
}

/// The code step: one right code per request, each on its own share and session.
pub fn code_step(work: &Path, base: &str, submissions: &Path, seconds: u64) -> WrkResult {
    let threads = THREADS.to_string();
    wrk(work, base, include_str!("code.lua"), "code", &[submissions.to_str().unwrap(), &threads], seconds)
}

/// `count` anonymous sessions written as `Cookie` header values, one per line.
pub async fn visitor_cookies(db: &Db, count: usize, file: &Path) {
    let sessions = sessions(db);
    let mut lines = String::new();
    for _ in 0..count {
        let new = sessions.create().await.unwrap();
        lines.push_str(&format!("{COOKIE}={}\n", new.cookie_value.expose()));
    }
    std::fs::write(file, lines).unwrap();
}

pub fn sessions(db: &Db) -> Sessions {
    Sessions::new(db.clone(), Duration::from_secs(12 * 3600), Duration::from_secs(7 * 24 * 3600))
}

/// `count` recipients at the code step, as the email step leaves them: a share each (its file is
/// never read), a browser session each, and a code issued to that session. Writes one line per
/// recipient for code.lua: path, cookie, CSRF token, the right code.
pub async fn code_submissions(db: &Db, sender_id: i64, count: usize, file: &Path) {
    let key = SecretKey::from_hex(super::procs::SECRET_KEY).unwrap();
    let workers = 8;
    let mut tasks = tokio::task::JoinSet::new();
    for worker in 0..workers {
        let (db, key) = (db.clone(), key.clone());
        tasks.spawn(async move {
            let links = ShareLinks::new(ShareRepository::new(db.clone()));
            let codes = Codes::new(db.clone(), &key);
            let sessions = sessions(&db);
            let mut lines = String::new();
            for i in (worker..count).step_by(workers) {
                let key = format!("bench-code-{i}-{}", &watasu::secret::random_token().expose()[..16]);
                let new = new_share(
                    sender_id,
                    StoredFile { key, size_bytes: 1, sha256: "x".into(), crc32: 0, sealed: None },
                    "f.txt",
                );
                let share = links.issue(&new).await.unwrap().remove(0);
                let session = sessions.create().await.unwrap();
                let code = codes.issue(share.share_id, session.session.id, true).await.unwrap().expect("a mailed code");
                lines.push_str(&format!(
                    "/s/{}/code {COOKIE}={} {} {}\n",
                    share.token.expose(),
                    session.cookie_value.expose(),
                    session.session.csrf_secret,
                    code.expose()
                ));
            }
            lines
        });
    }
    let mut all = String::new();
    while let Some(lines) = tasks.join_next().await {
        all.push_str(&lines.unwrap());
    }
    std::fs::write(file, all).unwrap();
}

/// A day-long share of `file` for the bench's recipient, without a receipt.
pub fn new_share(sender_id: i64, stored: StoredFile, name: &str) -> NewHandover {
    let content_type = "application/octet-stream".into();
    NewHandover {
        sender_id,
        files: vec![NewFile { stored, name: name.into(), content_type, upload_id: None }],
        note: None,
        recipients: vec![EmailAddress::parse("recipient@example.test").unwrap()],
        message: String::new(),
        lang: Lang::En,
        ttl: Duration::from_secs(24 * 3600),
        notify_on_download: false,
        name_file_in_mail: true,
        scan: false,
        allow_reply: false,
    }
}

/// What the sign-in driver did.
pub struct Logins {
    pub sent: u64,
    pub answered_200: u64,
    pub per_second: f64,
}

/// Sign-in attempts at `per_second` for `duration`, each for an unknown address from its own
/// client address (so no rate limit answers early): every one verifies the dummy argon2id hash,
/// which costs what checking a real password costs.
pub async fn logins(db: &Db, base: &str, per_second: u32, duration: Duration) -> Logins {
    let session = sessions(db).create().await.unwrap();
    let cookie = format!("{COOKIE}={}", session.cookie_value.expose());
    let csrf = session.session.csrf_secret.clone();
    let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let answered = Arc::new(AtomicU64::new(0));
    let mut ticks = tokio::time::interval(Duration::from_secs(1) / per_second);
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    let mut sent = 0u64;
    while started.elapsed() < duration {
        ticks.tick().await;
        sent += 1;
        let form = [
            ("csrf_token", csrf.clone()),
            ("email", format!("nobody-{sent}@example.test")),
            ("password", "not the password of anyone".to_owned()),
        ];
        let request = client
            .post(format!("{base}/login"))
            .header("Cookie", &cookie)
            .header("Sec-Fetch-Site", "same-origin")
            .header("X-Forwarded-For", format!("10.{}.{}.{}", (sent >> 16) & 255, (sent >> 8) & 255, sent & 255))
            .form(&form);
        let answered = answered.clone();
        tasks.spawn(async move {
            // A failed sign-in answers the form again with 200; a rate limit would say 429.
            if let Ok(response) = request.send().await
                && response.status() == 200
                && response.bytes().await.is_ok()
            {
                answered.fetch_add(1, Ordering::Relaxed);
            }
        });
    }
    while tasks.join_next().await.is_some() {}
    Logins {
        sent,
        answered_200: answered.load(Ordering::Relaxed),
        per_second: sent as f64 / started.elapsed().as_secs_f64(),
    }
}
