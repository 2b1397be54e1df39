//! Over an emulated link (`WATASU_BENCH_ONLY=network`; scripts/netlink: 200 Mbit/s, 0.5 % loss,
//! at 50 and 100 ms round trip): watasu's one-time download cut at half and resumed, a tus
//! upload by `watasu send` straight and through nginx capping bodies at 100 MB, and the new-share
//! page's own uploader in a headless Chromium, each against one curl GET or PUT of the same bytes
//! to nginx over the same link in the same round. curl, `watasu send` and Chromium run in the
//! client's namespace, watasu (release, SQLite, local disk) and nginx in the server's. Namespaces
//! isolate only the network: the bench makes the share, the granted session and the API token in
//! the same SQLite file the server uses, as the other figures do.
//!
//! Needs root. `WATASU_BENCH_NETWORK_MIB` sets the file's size (1024; 64 with
//! `WATASU_BENCH_QUICK=1`), `WATASU_BENCH_NETWORK_CC` TCP's congestion control on the link (the
//! kernel's otherwise), `WATASU_BENCH_NETWORK_SECONDS` when a transfer is cut (300).

use std::{
    fs::File,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use watasu::db::Db;

use super::{
    blocking,
    browser::Chromium,
    downloads,
    procs::{self, Nginx, Place, Watasu, command_in},
    seeded_sqlite,
    transfer::{self, Curl, Transfer},
};

const RTTS_MS: [u64; 2] = [50, 100];
const LOSS: f64 = 0.005;
const RATE_MBIT: u64 = 200;
const CLIENT: Place = Place { netns: Some("wts-client"), host: "10.77.0.1" };
const SERVER: Place = Place { netns: Some("wts-server"), host: "10.77.0.2" };
const WATASU_PORT: u16 = 8000;
/// Issue 38's goals, as fractions of the single curl transfer over the same link.
const DOWNLOAD_GOAL: f64 = 0.95;
const TUS_GOAL: f64 = 0.9;
/// The proxy's cap on request bodies in MB: Cloudflare's on its Free and Pro plans.
const PROXY_CAP_MB: u64 = 100;

/// What one run measures with.
struct Settings {
    bytes: u64,
    cc: String,
    cap_seconds: u64,
}

impl Settings {
    fn from_env(quick: bool) -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let mib: u64 = var("WATASU_BENCH_NETWORK_MIB").map_or(if quick { 64 } else { 1024 }, |v| v.parse().unwrap());
        let cc = var("WATASU_BENCH_NETWORK_CC").unwrap_or_else(|| {
            std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control").unwrap().trim().to_owned()
        });
        let cap_seconds = var("WATASU_BENCH_NETWORK_SECONDS").map_or(300, |v| v.parse().unwrap());
        Self { bytes: mib << 20, cc, cap_seconds }
    }
}

/// A transfer over the link, and whether the cap cut it (its rate is then that of what moved).
#[derive(Clone, Copy)]
struct Moved {
    transfer: Transfer,
    cut: bool,
}

/// One round trip's figures.
struct Round {
    rtt_ms: u64,
    ping: String,
    get: Moved,
    download: Moved,
    put: Moved,
    tus_direct: Moved,
    tus_proxied: Moved,
    page: Moved,
    /// The link's counters of both directions: lost at random, dropped at the full queue.
    lost: u64,
    queue_full: u64,
}

/// Measures every round trip; answers the markdown table.
pub async fn run(work: &Path, quick: bool) -> String {
    assert!(procs::is_root(), "the network figures need root (network namespaces and TUN devices)");
    let settings = Settings::from_env(quick);
    let dir = work.join("network");
    let (data, www) = (dir.join("data"), dir.join("www"));
    std::fs::create_dir_all(www.join("up")).unwrap();
    let (db, url) = seeded_sqlite(&data).await;
    let token = api_token(&data, &url);
    eprintln!("bench: writing the {} MiB source file", settings.bytes >> 20);
    let source = www.join("source.bin");
    let (path, size) = (source.clone(), settings.bytes);
    blocking(move || transfer::make_source(&path, size)).await;

    let mut rounds = Vec::new();
    for rtt_ms in RTTS_MS {
        eprintln!("bench: network at {rtt_ms} ms");
        rounds.push(round(&db, &settings, rtt_ms, &token, &data, &url, &source, &dir).await);
    }
    db.close().await;
    render(&settings, &rounds)
}

/// An API token of the seeded sender for `watasu send`, made as README says (`watasu token create`).
fn api_token(data: &Path, url: &str) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_watasu"))
        .args(["token", "create", "--user", "bench@example.test", "--name", "network bench"])
        .args(["--scope", "shares:write", "--data-dir", data.to_str().unwrap(), "--database-url", url])
        .args(["--secret-key", procs::SECRET_KEY])
        .env("WATASU_FILE_KEY", procs::FILE_KEY)
        .env_remove("RUST_LOG")
        .output()
        .expect("running watasu token create");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "token create failed: {stdout}{}", String::from_utf8_lossy(&output.stderr));
    stdout.lines().last().unwrap().trim().to_owned()
}

#[allow(clippy::too_many_arguments)]
async fn round(
    db: &Db,
    s: &Settings,
    rtt_ms: u64,
    token: &str,
    data: &Path,
    url: &str,
    source: &Path,
    dir: &Path,
) -> Round {
    let link = Link::up(rtt_ms, &s.cc);
    let www = source.parent().unwrap();
    let reference = Nginx::serving_and_taking(&dir.join("nginx"), www, SERVER);
    let watasu_addr = format!("{}:{WATASU_PORT}", SERVER.host);
    let server = Watasu::spawn_in(SERVER.netns.unwrap(), &watasu_addr, SERVER.host, data, url, &dir.join("watasu.log"));
    let proxy = Nginx::proxying_at(&dir.join("nginx-proxy"), SERVER, &watasu_addr, &format!("{PROXY_CAP_MB}m"));
    wait_ready(&server.base).await;
    let curl = Curl { netns: CLIENT.netns, max_seconds: Some(s.cap_seconds) };
    let ping = ping();

    eprintln!("bench: curl GET from nginx, then watasu's download resumed");
    let nginx_file =
        format!("http://{}:{}/{}", SERVER.host, reference.port, source.file_name().unwrap().to_str().unwrap());
    let get = curl_transfer(curl, s.bytes, &["-o", "/dev/null"], &nginx_file, &["200"]).await;
    let download = download(db, curl, &server.base, data, source, dir).await;

    eprintln!("bench: curl PUT to nginx, then watasu send straight and through nginx");
    let put_url = format!("http://{}:{}/up/source.bin", SERVER.host, reference.port);
    let from = source.to_str().unwrap();
    // No `Expect: 100-continue` round trip: watasu send does not wait for one either.
    let put =
        curl_transfer(curl, s.bytes, &["-o", "/dev/null", "-H", "Expect:", "-T", from], &put_url, &["201", "204"])
            .await;
    let _ = std::fs::remove_file(www.join("up/source.bin"));
    let tus_direct = send(db, s, token, source, &server.base, data, dir).await;
    let proxied = format!("http://{}:{}", SERVER.host, proxy.port);
    let tus_proxied = send(db, s, token, source, &proxied, data, dir).await;
    eprintln!("bench: the page's uploader in Chromium");
    let page = page_upload(db, s, source, &server.base, data, dir).await;

    proxy.stop();
    server.stop();
    reference.stop();
    let (lost, queue_full) = link.down();
    Round { rtt_ms, ping, get, download, put, tus_direct, tus_proxied, page, lost, queue_full }
}

/// Polls watasu's /readyz from the client's side until it answers 200.
async fn wait_ready(base: &str) {
    let started = Instant::now();
    let url = format!("{base}/readyz");
    loop {
        let probe = url.clone();
        if blocking(move || CLIENT.status_of(&probe)).await == Some(200) {
            return;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "watasu was not ready after 60 s (see its log)");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The mean round trip of 20 pings from the client's side, as text.
fn ping() -> String {
    let output = command_in(CLIENT.netns, "ping")
        .args(["-q", "-c", "20", "-i", "0.2", SERVER.host])
        .output()
        .expect("running ping");
    let text = String::from_utf8_lossy(&output.stdout);
    // rtt min/avg/max/mdev = 50.4/50.6/50.9/0.1 ms
    let mean = text.lines().find(|l| l.starts_with("rtt")).and_then(|l| l.split('=').nth(1)?.split('/').nth(1));
    mean.map_or_else(|| "no answer".to_owned(), |m| format!("{} ms", m.trim()))
}

/// One capped curl transfer of `bytes` from the client's side; `ok` are the statuses that say it
/// went through (a cut one may have none).
async fn curl_transfer(curl: Curl, bytes: u64, args: &[&str], url: &str, ok: &[&str]) -> Moved {
    let mut args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    args.extend(["-w".into(), "%{http_code} %{size_download} %{size_upload} %{time_total}".into(), url.into()]);
    let ok: Vec<String> = ok.iter().map(|s| s.to_string()).collect();
    blocking(move || {
        let words = curl.run(&args.iter().map(String::as_str).collect::<Vec<_>>());
        let moved: u64 = words[1].parse::<u64>().unwrap().max(words[2].parse().unwrap());
        let cut = moved < bytes;
        assert!(cut || ok.contains(&words[0]), "curl {args:?} was answered {}", words[0]);
        Moved { transfer: Transfer { bytes: moved, seconds: words[3].parse().unwrap() }, cut }
    })
    .await
}

/// watasu's one-time download of a share of `source`, cut at half and resumed.
async fn download(db: &Db, curl: Curl, base: &str, data: &Path, source: &Path, dir: &Path) -> Moved {
    let before = transfer::stored_files(data);
    let token = downloads::share_of(db, data, source).await;
    let (cookie, csrf) = transfer::granted(db, &token).await;
    let size = std::fs::metadata(source).unwrap().len();
    let (base, scratch) = (base.to_owned(), dir.to_owned());
    let moved = blocking(move || transfer::download_resumed(curl, &base, &token, &cookie, &csrf, size, &scratch)).await;
    remove_new_files(data, &before);
    Moved { transfer: moved, cut: moved.bytes < size }
}

/// `watasu send` of `source` from the client's side to the server at `base`, timed from start to
/// exit (the token's check, the upload and the handover). At the cap it is killed, and what moved
/// is the offset the server recorded for the upload.
async fn send(db: &Db, s: &Settings, token: &str, source: &Path, base: &str, data: &Path, dir: &Path) -> Moved {
    let before = transfer::stored_files(data);
    let log = File::options().create(true).append(true).open(dir.join("send.log")).unwrap();
    let mut child = command_in(CLIENT.netns, env!("CARGO_BIN_EXE_watasu"))
        .args(["send", source.to_str().unwrap(), "--to", "recipient@example.test", "--server", base])
        .args(["--lang", "en"])
        .env("WATASU_TOKEN", token)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("running watasu send");
    let started = Instant::now();
    let cap = Duration::from_secs(s.cap_seconds);
    let moved = loop {
        if let Some(status) = child.try_wait().unwrap() {
            let seconds = started.elapsed().as_secs_f64();
            assert!(status.success(), "watasu send to {base} failed (see send.log)");
            break Moved { transfer: Transfer { bytes: s.bytes, seconds }, cut: false };
        }
        if started.elapsed() >= cap {
            let _ = child.kill();
            let _ = child.wait();
            let seconds = started.elapsed().as_secs_f64();
            break Moved { transfer: Transfer { bytes: latest_upload_offset(db).await, seconds }, cut: true };
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    remove_new_files(data, &before);
    moved
}

/// The new-share page's uploader in a Chromium on the client's side, timed from the click to the
/// share's page; at the cap, what moved is the offset the server recorded.
async fn page_upload(db: &Db, s: &Settings, source: &Path, base: &str, data: &Path, dir: &Path) -> Moved {
    let before = transfer::stored_files(data);
    let (cookie, _) = transfer::signed_in(db, 1).await;
    let profile = dir.join("chromium");
    let _ = std::fs::remove_dir_all(&profile);
    let chromium = Chromium::start_in(CLIENT.netns.unwrap(), &profile).await;
    let cap = Duration::from_secs(s.cap_seconds);
    let took = chromium.upload(base, &cookie, source, cap).await;
    chromium.stop().await;
    let moved = match took {
        Some(seconds) => Moved { transfer: Transfer { bytes: s.bytes, seconds }, cut: false },
        None => {
            let bytes = latest_upload_offset(db).await;
            Moved { transfer: Transfer { bytes, seconds: cap.as_secs_f64() }, cut: true }
        }
    };
    remove_new_files(data, &before);
    moved
}

/// The bytes the server holds of the latest upload.
async fn latest_upload_offset(db: &Db) -> u64 {
    let Db::Sqlite(pool) = db else { unreachable!("the network figures run on SQLite") };
    let offset: Option<i64> = sqlx::query_scalar("SELECT upload_offset FROM uploads ORDER BY id DESC LIMIT 1")
        .fetch_optional(pool)
        .await
        .unwrap();
    offset.unwrap_or(0) as u64
}

/// Removes the stored files that are not among `before`: a round's shares need no collector.
fn remove_new_files(data: &Path, before: &[PathBuf]) {
    for file in transfer::stored_files(data).into_iter().filter(|f| !before.contains(f)) {
        std::fs::remove_file(file).unwrap();
    }
}

/// The emulated link (scripts/netlink), taken down with whatever still runs in its namespaces
/// when dropped, also when a measurement fails.
struct Link;

fn netlink() -> Command {
    Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/netlink"))
}

impl Link {
    fn up(rtt_ms: u64, cc: &str) -> Self {
        let status = netlink()
            .args(["up", "--rtt-ms", &rtt_ms.to_string(), "--loss", &LOSS.to_string()])
            .args(["--rate-mbit", &RATE_MBIT.to_string(), "--cc", cc])
            .status()
            .expect("running scripts/netlink");
        assert!(status.success(), "scripts/netlink up failed");
        Self
    }

    /// Takes the link down; answers its packets lost at random and dropped at the full queue,
    /// both directions together.
    fn down(self) -> (u64, u64) {
        std::mem::forget(self);
        let output = netlink().arg("down").output().expect("running scripts/netlink down");
        // netlink: to server: 1 packets, 2 bytes, 3 lost, 4 dropped at the full queue, 0 not written
        let (mut lost, mut queue_full) = (0, 0);
        for line in String::from_utf8_lossy(&output.stderr).lines().filter(|l| l.contains(" packets, ")) {
            let words: Vec<&str> = line.split_whitespace().collect();
            let before = |word: &str| {
                let at = words.iter().position(|w| w.trim_end_matches(',') == word).unwrap();
                words[at - 1].parse::<u64>().unwrap()
            };
            lost += before("lost");
            queue_full += before("dropped");
        }
        (lost, queue_full)
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        let _ = netlink().arg("down").stdout(Stdio::null()).stderr(Stdio::null()).status();
    }
}

fn rate(m: &Moved) -> String {
    let t = m.transfer;
    let cut = if m.cut { " (cut)" } else { "" };
    format!("{:.1} MB/s ({:.0} Mbit/s){cut}", t.mb_per_s(), t.mb_per_s() * 8.0)
}

fn ratio(of: &Moved, to: &Moved, goal: f64) -> (String, String) {
    let r = of.transfer.mb_per_s() / to.transfer.mb_per_s();
    (format!("{r:.2}"), format!("≥ {goal} {}", if r >= goal { "met" } else { "missed" }))
}

fn render(s: &Settings, rounds: &[Round]) -> String {
    let mut table = format!(
        "## Over an emulated link: {RATE_MBIT} Mbit/s, {} % loss, TCP {}

{} MiB each transfer; the client in one network namespace, nginx and watasu (release binary,
SQLite, local disk) in the other; each transfer cut after {} s. Goals (issue 38): the download
≥ {DOWNLOAD_GOAL} and the tus upload ≥ {TUS_GOAL} of the single curl transfer of the same round.

| Round trip | Transfer | Rate | Single curl transfer to nginx | Ratio | Goal |
|---|---|---|---|---|---|
",
        LOSS * 100.0,
        s.cc,
        s.bytes >> 20,
        s.cap_seconds
    );
    let download = "one-time download, cut at half and resumed (`Range`, `If-Range`)";
    let tus = format!("`watasu send`: tus in {} MiB PATCHes, straight", super::TUS_CHUNK >> 20);
    let proxied = format!("the same through nginx capping bodies at {PROXY_CAP_MB} MB");
    let page = "the new-share page's uploader (tus-js-client, 50 MiB chunks) in headless Chromium, straight";
    for r in rounds {
        let at = format!("{} ms (ping {})", r.rtt_ms, r.ping);
        let rows = [
            (download, &r.download, &r.get, "GET", DOWNLOAD_GOAL),
            (tus.as_str(), &r.tus_direct, &r.put, "PUT", TUS_GOAL),
            (proxied.as_str(), &r.tus_proxied, &r.put, "PUT", TUS_GOAL),
            (page, &r.page, &r.put, "PUT", TUS_GOAL),
        ];
        for (what, of, to, method, goal) in rows {
            let (share, against_goal) = ratio(of, to, goal);
            table.push_str(&format!(
                "| {at} | {what} | {} | {method}: {} | {share} | {against_goal} |\n",
                rate(of),
                rate(to)
            ));
        }
    }
    table.push('\n');
    for r in rounds {
        table.push_str(&format!(
            "At {} ms the link lost {} packets at random and dropped {} at its full queue (both ways).\n",
            r.rtt_ms, r.lost, r.queue_full
        ));
    }
    table
}
