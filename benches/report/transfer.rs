//! Moving big files: the dashboard upload against `dd conv=fsync`, the one-time download against
//! nginx with sendfile, both with curl over loopback; and 200 racing download POSTs on one share.

use std::{
    io::Write,
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use rand::RngExt;
use watasu::{
    db::Db,
    secret::sha256_hex,
    share::{DownloadGrants, ShareRepository},
};

use super::load::{COOKIE, sessions};

/// A transfer: bytes moved and how long it took.
#[derive(Clone, Copy, Debug, Default)]
pub struct Transfer {
    pub bytes: u64,
    pub seconds: f64,
}

impl Transfer {
    pub fn mb_per_s(&self) -> f64 {
        self.bytes as f64 / 1e6 / self.seconds
    }
}

/// Writes `size` bytes of incompressible data (one random MiB over and over) and flushes them to
/// disk, so their write-back does not land in a measurement.
pub fn make_source(path: &Path, size: u64) {
    let mut chunk = vec![0u8; 1 << 20];
    rand::rng().fill(&mut chunk[..]);
    let mut file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut left = size;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        file.write_all(&chunk[..n]).unwrap();
        left -= n as u64;
    }
    file.into_inner().unwrap().sync_all().unwrap();
}

fn sync() {
    let _ = Command::new("sync").status();
}

/// `dd if=source of=target bs=1M conv=fsync`, timed from start to exit.
pub fn dd(source: &Path, target: &Path) -> Transfer {
    sync();
    let started = Instant::now();
    let status = Command::new("dd")
        .arg(format!("if={}", source.display()))
        .arg(format!("of={}", target.display()))
        .args(["bs=1M", "conv=fsync", "status=none"])
        .status()
        .expect("running dd");
    let seconds = started.elapsed().as_secs_f64();
    assert!(status.success(), "dd failed");
    let bytes = std::fs::metadata(target).unwrap().len();
    std::fs::remove_file(target).unwrap();
    Transfer { bytes, seconds }
}

/// Where a curl runs: on this machine over loopback, or on the client's side of the emulated
/// link (scripts/netlink), where each request is cut after a time so a slow link ends the run.
#[derive(Clone, Copy, Debug)]
pub struct Curl {
    /// The network namespace to run in (`ip netns exec`), if any.
    pub netns: Option<&'static str>,
    /// Seconds after which a request is cut (`--max-time`); its `-w` output then tells what moved.
    pub max_seconds: Option<u64>,
}

impl Curl {
    pub const HERE: Self = Self { netns: None, max_seconds: None };

    /// Runs curl; returns its `-w` output split into words.
    pub fn run(&self, args: &[&str]) -> Vec<String> {
        let mut command = super::procs::command_in(self.netns, "curl");
        command.args(["-s", "-S"]);
        if let Some(seconds) = self.max_seconds {
            command.args(["--max-time", &seconds.to_string()]);
        }
        let output = command.args(args).output().expect("running curl");
        // 28: cut at --max-time, which only a capped curl asks for.
        let cut = self.max_seconds.is_some() && output.status.code() == Some(28);
        assert!(output.status.success() || cut, "curl {args:?} failed: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout).split_whitespace().map(str::to_owned).collect()
    }
}

/// Runs curl on this machine; returns its `-w` output split into words.
pub fn curl(args: &[&str]) -> Vec<String> {
    Curl::HERE.run(args)
}

/// A signed-in sender's session: (Cookie header value, CSRF token).
pub async fn signed_in(db: &Db, user_id: i64) -> (String, String) {
    let sessions = sessions(db);
    let anonymous = sessions.create().await.unwrap();
    let new = sessions.sign_in(anonymous.session.id, user_id).await.unwrap().expect("the session exists");
    (format!("{COOKIE}={}", new.cookie_value.expose()), new.session.csrf_secret)
}

/// Uploads `source` through POST /shares/new as the browser's form does (CSRF token first, the
/// file last); returns the transfer and the new share's link token.
pub fn upload(base: &str, cookie: &str, csrf: &str, source: &Path, answer: &Path) -> (Transfer, String) {
    let size = std::fs::metadata(source).unwrap().len();
    let file_field = format!("file=@{};type=application/octet-stream;filename=big.bin", source.display());
    let words = curl(&[
        "-o",
        answer.to_str().unwrap(),
        "-w",
        "%{http_code} %{time_total}",
        // The form answers 303 to the created page, whose link travels in a cookie set on the way:
        // `-c` turns on curl's cookie engine, which `-b` with a literal cookie does not.
        "-L",
        "-b",
        cookie,
        "-c",
        "/dev/null",
        "-H",
        "Sec-Fetch-Site: same-origin",
        // No `Expect: 100-continue` round trip: a browser does not wait for one either.
        "-H",
        "Expect:",
        "-F",
        &format!("csrf_token={csrf}"),
        "-F",
        "recipient=recipient@example.test",
        "-F",
        "expires_in=1d",
        "-F",
        "mail_lang=en",
        "-F",
        &file_field,
        &format!("{base}/shares/new"),
    ]);
    let body = std::fs::read_to_string(answer).unwrap_or_default();
    assert_eq!(words[0], "200", "the upload failed: {body}");
    (Transfer { bytes: size, seconds: words[1].parse().unwrap() }, link_token(&body))
}

/// The share link's token on the created page.
fn link_token(page: &str) -> String {
    // askama escapes the slashes in the field's value.
    page.replace("&#x2f;", "/")
        .split("/s/")
        .skip(1)
        .map(|rest| rest.chars().take_while(char::is_ascii_hexdigit).collect::<String>())
        .find(|t| t.len() == 64)
        .unwrap_or_else(|| panic!("the answer shows no share link: {}", &page[page.len().saturating_sub(1500)..]))
}

/// Uploads `source` as the new-share page does: a tus upload sent in `chunk`-byte PATCH requests,
/// then the form posted with the finished upload's id. Timed from the creation request to the
/// created page; returns the transfer and the new share's link token.
pub async fn upload_tus(base: &str, cookie: &str, csrf: &str, source: &Path, chunk: u64) -> (Transfer, String) {
    use base64::Engine;
    use tokio::io::{AsyncReadExt, AsyncSeekExt};
    let size = std::fs::metadata(source).unwrap().len();
    let client = reqwest::Client::new();
    let tus = |request: reqwest::RequestBuilder| {
        request.header("Cookie", cookie).header("X-CSRF-Token", csrf).header("Tus-Resumable", "1.0.0")
    };
    let started = Instant::now();
    let name = base64::engine::general_purpose::STANDARD.encode("big.bin");
    let created = tus(client.post(format!("{base}/uploads")))
        .header("Upload-Length", size)
        .header("Upload-Metadata", format!("filename {name}"))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201, "the tus creation was refused: {}", created.text().await.unwrap_or_default());
    let location = created.headers()["location"].to_str().unwrap().to_owned();
    let mut offset = 0;
    while offset < size {
        let len = chunk.min(size - offset);
        let mut file = tokio::fs::File::open(source).await.unwrap();
        file.seek(std::io::SeekFrom::Start(offset)).await.unwrap();
        let body = reqwest::Body::wrap_stream(tokio_util::io::ReaderStream::with_capacity(file.take(len), 256 << 10));
        let answer = tus(client.patch(format!("{base}{location}")))
            .header("Content-Type", "application/offset+octet-stream")
            .header("Upload-Offset", offset)
            .header("Content-Length", len)
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 204, "a PATCH failed: {}", answer.text().await.unwrap_or_default());
        offset = answer.headers()["upload-offset"].to_str().unwrap().parse().unwrap();
    }
    let upload_id = location.rsplit('/').next().unwrap().to_owned();
    let form = reqwest::multipart::Form::new()
        .text("csrf_token", csrf.to_owned())
        .text("recipient", "recipient@example.test")
        .text("expires_in", "1d")
        .text("mail_lang", "en")
        .text("upload", upload_id);
    let not_following = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let answer = not_following
        .post(format!("{base}/shares/new"))
        .header("Cookie", cookie)
        .header("Sec-Fetch-Site", "same-origin")
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 303, "the share was not created from the upload");
    // The created page shows the link from a cookie set by the 303.
    let location = answer.headers()["location"].to_str().unwrap().to_owned();
    let link_cookie = answer.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_owned();
    let created = client.get(format!("{base}{location}")).header("Cookie", format!("{cookie}; {link_cookie}"));
    let page = created.send().await.unwrap().text().await.unwrap();
    (Transfer { bytes: size, seconds: started.elapsed().as_secs_f64() }, link_token(&page))
}

/// A browser session holding a download grant for the share of `token` (as a verified recipient
/// has): (Cookie header value, CSRF token).
pub async fn granted(db: &Db, token: &str) -> (String, String) {
    let share_id = ShareRepository::new(db.clone()).id_by_token_hash(&sha256_hex(token)).await.unwrap().unwrap();
    let session = sessions(db).create().await.unwrap();
    DownloadGrants::new(db.clone(), Duration::from_secs(1800)).grant(session.session.id, share_id).await.unwrap();
    (format!("{COOKIE}={}", session.cookie_value.expose()), session.session.csrf_secret)
}

/// The one download of a share, with curl, discarding the bytes: the claim's POST, then (`-L`)
/// the GET of the file its 303 names, with the same cookie.
pub fn download_watasu(base: &str, token: &str, cookie: &str, csrf: &str) -> Transfer {
    let words = curl(&[
        "-L",
        "-o",
        "/dev/null",
        "-w",
        "%{http_code} %{size_download} %{time_total}",
        "-H",
        &format!("Cookie: {cookie}"),
        "-H",
        "Sec-Fetch-Site: same-origin",
        "--data",
        &format!("csrf_token={csrf}"),
        &format!("{base}/s/{token}/download"),
    ]);
    assert_eq!(words[0], "200", "the download was refused");
    Transfer { bytes: words[1].parse().unwrap(), seconds: words[2].parse().unwrap() }
}

/// The one download of a share cut in the middle and resumed, as a browser resumes: the claim,
/// the first half, then the rest with `Range` and `If-Range`; all three timed together. A capped
/// `curl` may cut each half short: the bytes then fall short of `size`.
pub fn download_resumed(
    curl: Curl,
    base: &str,
    token: &str,
    cookie: &str,
    csrf: &str,
    size: u64,
    work: &Path,
) -> Transfer {
    let cookie = format!("Cookie: {cookie}");
    let claim = curl.run(&[
        "-o",
        "/dev/null",
        "-w",
        "%{http_code} %{redirect_url} %{time_total}",
        "-H",
        &cookie,
        "-H",
        "Sec-Fetch-Site: same-origin",
        "--data",
        &format!("csrf_token={csrf}"),
        &format!("{base}/s/{token}/download"),
    ]);
    assert_eq!(claim[0], "303", "the claim was refused");
    let (file_url, headers) = (&claim[1], work.join("resumed-headers.txt"));
    let ranged = |range: &str, extra: &[&str]| {
        let mut args = vec!["-o", "/dev/null", "-D", headers.to_str().unwrap(), "-H", &cookie, "-r", range];
        args.extend(extra);
        args.extend(["-w", "%{http_code} %{size_download} %{time_total}", file_url]);
        let words = curl.run(&args);
        assert_eq!(words[0], "206", "the range {range} was answered {}", words[0]);
        Transfer { bytes: words[1].parse().unwrap(), seconds: words[2].parse().unwrap() }
    };
    let half = size / 2;
    let first = ranged(&format!("0-{}", half - 1), &[]);
    let head = std::fs::read_to_string(&headers).unwrap();
    let etag = head.lines().find_map(|l| l.strip_prefix("etag: ").or_else(|| l.strip_prefix("ETag: ")));
    let if_range = format!("If-Range: {}", etag.expect("the file has an ETag").trim());
    let rest = ranged(&format!("{half}-"), &["-H", &if_range]);
    Transfer {
        bytes: first.bytes + rest.bytes,
        seconds: claim[2].parse::<f64>().unwrap() + first.seconds + rest.seconds,
    }
}

/// A GET of `url` with curl, discarding the bytes.
pub fn download_plain(url: &str) -> Transfer {
    let words = curl(&["-o", "/dev/null", "-w", "%{http_code} %{size_download} %{time_total}", url]);
    assert_eq!(words[0], "200", "GET {url} answered {}", words[0]);
    Transfer { bytes: words[1].parse().unwrap(), seconds: words[2].parse().unwrap() }
}

/// The stored files of a data folder.
pub fn stored_files(data_dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(data_dir.join("files")).unwrap().flatten().map(|e| e.path()).collect()
}

/// The one stored file that is not among `before` (the one an upload just stored).
pub fn new_stored_file(data_dir: &Path, before: &[PathBuf]) -> PathBuf {
    let new: Vec<_> = stored_files(data_dir).into_iter().filter(|p| !before.contains(p)).collect();
    assert_eq!(new.len(), 1, "the upload stored {new:?}");
    new[0].clone()
}

/// How 200 simultaneous download POSTs of 200 granted sessions on one share were answered: the
/// claim is a 303 to the file (`ok`), every other a 410.
#[derive(Debug, Default)]
pub struct Race {
    pub ok: u32,
    pub gone: u32,
    pub other: u32,
}

/// Makes a 1 MiB share with `watasu share create`, grants 200 sessions, and sends their 200
/// download POSTs at once, each on its own connection. (One session's repeated POSTs are no
/// second claim: after its claim it is sent to the file again.)
pub async fn race(db: &Db, data_dir: &Path, database_url: &str, base: &str, work: &Path) -> Race {
    let file = work.join("race.bin");
    make_source(&file, 1 << 20);
    let output = Command::new(env!("CARGO_BIN_EXE_watasu"))
        .args(["share", "create", "--from", "bench@example.test", "--to", "recipient@example.test"])
        .args(["--file", file.to_str().unwrap(), "--lang", "en"])
        .args(["--data-dir", data_dir.to_str().unwrap(), "--database-url", database_url])
        .args(["--secret-key", super::procs::SECRET_KEY])
        .env("WATASU_FILE_KEY", super::procs::FILE_KEY)
        .env_remove("RUST_LOG")
        .output()
        .expect("running watasu share create");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "share create failed: {stdout}{}", String::from_utf8_lossy(&output.stderr));
    let url = stdout.lines().last().unwrap().trim();
    let token = url.rsplit('/').next().unwrap().to_owned();
    std::fs::remove_file(&file).unwrap();
    let start = std::sync::Arc::new(tokio::sync::Barrier::new(200));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..200 {
        let (cookie, csrf) = granted(db, &token).await;
        // One client each: 200 connections, not 200 requests queued on a few.
        // Redirects not followed: the claim's own answer is what is counted.
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let request = client
            .post(format!("{base}/s/{token}/download"))
            .header("Cookie", &cookie)
            .header("Sec-Fetch-Site", "same-origin")
            .form(&[("csrf_token", csrf.as_str())]);
        let start = start.clone();
        tasks.spawn(async move {
            start.wait().await;
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            response.bytes().await.unwrap();
            status
        });
    }
    let mut race = Race::default();
    while let Some(status) = tasks.join_next().await {
        match status.unwrap() {
            303 => race.ok += 1,
            410 => race.gone += 1,
            _ => race.other += 1,
        }
    }
    race
}
